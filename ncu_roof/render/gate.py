"""Renderers of a gate result: a :class:`~ncu_roof.comparison.gate.GateResult` in, text (one OK
or FAILED line, a line per violation, notes) or JSON (schema ``ncu-roof/check/1``) out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ncu_roof.comparison.gate import SCHEMA, GateResult
from ncu_roof.fmt import plural
from ncu_roof.jsonable import clean


def to_dict(result: GateResult) -> dict[str, Any]:
    """The JSON contract (schema ``ncu-roof/check/1``)."""
    return clean(
        {
            "schema": SCHEMA,
            "passed": result.passed,
            "rules": result.rules,
            "inputs": result.inputs,
            "baseline": result.baseline,
            "checked": result.checked,
            "bounds_checked": result.bounds_checked,
            "violations": [v.as_dict() for v in result.violations],
            "unchecked": result.unchecked,
            "notes": result.notes,
        }
    )


def render_json(result: GateResult, unchecked_fatal: bool = False) -> str:
    """The JSON contract as text; it lists the unchecked bounds whether or not they are fatal."""
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"


def render_text(result: GateResult, unchecked_fatal: bool = False) -> str:
    """One OK line, or FAILED and one line per violation; notes after.

    ``unchecked_fatal``: the bounds checked on nothing are left out of the notes (``ncu-roof
    check`` reports them as the error that follows) and the OK line says it covers only the
    bounds that were checked."""
    c = result.checked
    scope = (
        f"{plural(c['kernels'], 'kernel')}, {plural(c['regions'], 'region')} checked "
        f"against {result.rules}"
    )
    if result.baseline:
        scope += " and the baseline"
    if c.get("skipped"):
        scope += f" ({c['skipped']} not checked: shorter than min_time_s or skip = true)"
    if result.passed and unchecked_fatal and result.unchecked:
        lines = [f"ncu-roof check: OK on the bounds that could be checked: {scope}"]
    elif result.passed:
        lines = [f"ncu-roof check: OK: {scope}"]
    else:
        lines = [f"ncu-roof check: FAILED: {plural(len(result.violations), 'violation')}; {scope}"]
        lines += [f"- {v.message}" for v in result.violations]
    unchecked = [] if unchecked_fatal else result.unchecked
    lines += [f"note: {n}" for n in unchecked + result.notes]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[GateResult, bool], str]] = {"text": render_text, "json": render_json}
