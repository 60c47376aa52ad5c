"""Renderers of a diagnosis: text (terminal), markdown and JSON, chosen by name or file suffix."""

from __future__ import annotations

import json
from collections.abc import Callable

from ncu_roof.diagnosis import Diagnosis, to_dict
from ncu_roof.render.markdown import render_markdown
from ncu_roof.render.text import render_text


def render_json(d: Diagnosis) -> str:
    return json.dumps(to_dict(d), indent=2, allow_nan=False) + "\n"


RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
__all__ = ["RENDERERS", "render_json", "render_markdown", "render_text"]
