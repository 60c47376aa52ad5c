"""Renderers of a diagnosis: text (terminal), markdown and JSON, chosen by name or file suffix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ncu_roof.diagnose import Diagnosis, to_dict
from ncu_roof.errors import InputError
from ncu_roof.report.markdown import render_markdown
from ncu_roof.report.text import render_text


def render_json(d: Diagnosis) -> str:
    return json.dumps(to_dict(d), indent=2, allow_nan=False) + "\n"


RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
SUFFIXES = {".txt": "text", ".md": "markdown", ".json": "json"}


def pick_format(fmt: str | None, output: Path | None) -> str:
    """--format wins; else the output file's suffix; else text."""
    if fmt:
        if fmt not in RENDERERS:
            raise InputError(f"unknown format {fmt!r}: choose one of {', '.join(RENDERERS)}")
        return fmt
    if output is not None and output.suffix in SUFFIXES:
        return SUFFIXES[output.suffix]
    return "text"


__all__ = ["RENDERERS", "pick_format", "render_json", "render_markdown", "render_text"]
