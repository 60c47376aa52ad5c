"""Renderers of a diagnosis: text (terminal), markdown, JSON and the digest (a token budget, for
agents), chosen by name or file suffix."""

from __future__ import annotations

from collections.abc import Callable

from ncu_roof.diagnosis import Diagnosis, to_json
from ncu_roof.render.digest import render_digest
from ncu_roof.render.markdown import render_markdown
from ncu_roof.render.text import render_text


def render_json(d: Diagnosis) -> str:
    return to_json(d, end="\n")


RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "digest": render_digest,  # within the default token budget
}
__all__ = ["RENDERERS", "render_digest", "render_json", "render_markdown", "render_text"]
