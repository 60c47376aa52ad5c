"""Temporary shim while the CSV reader moves from ncu_roof/load/ (see ncu_roof/load/csv.py)."""

from ncu_roof.load.csv import *  # noqa: F401,F403
from ncu_roof.load.csv import load_csv  # noqa: F401
