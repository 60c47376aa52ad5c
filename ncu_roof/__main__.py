import sys

from ncu_roof.errors import missing_dependency

try:
    from ncu_roof.cli import run
except ModuleNotFoundError as exc:  # typer absent: a Python without the dependencies
    print(missing_dependency(exc), file=sys.stderr)
    raise SystemExit(2) from None

if __name__ == "__main__":
    run()
