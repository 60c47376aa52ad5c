"""Diagnosis rules: importing this package registers every rule module with rules.base.RULES."""

from __future__ import annotations

from ncu_roof.rules import checklist, limiter, traps  # noqa: F401 - registers the rules
from ncu_roof.rules.base import RULES, Context, Finding, Skipped, evaluate, rule

__all__ = ["RULES", "Context", "Finding", "Skipped", "evaluate", "rule"]
