"""The names inputs read from a stream are shown by.

Standard input and pipes are read once into a temporary file (every reader, in any process, can
then re-read it); this module remembers which temporary file stands for which stream, so that outputs
and messages name what the user gave (``-``, ``<stdin>``, the FIFO's path), never the copy.
Imports nothing of the package: the error line (``ncu_roof.errors``) asks it too.
"""

from __future__ import annotations

STDIN_OUTPUT = "-"  # standard input in outputs: the argument the user gave, as a path is written
STDIN_MESSAGE = "<stdin>"  # standard input in a message on stderr

_COPIES: dict[str, str] = {}  # temporary copy -> the stream it was read from ("-" or the pipe's path)


def remember(copy: str, given: str) -> None:
    """Record that the temporary file ``copy`` holds what was read from ``given`` (``-`` or a path)."""
    _COPIES[copy] = given


_MARKDOWN = "\\`*_<>|[]"  # what the Markdown renderer backslash-escapes


def _forms(text: str) -> tuple[str, ...]:
    """``text`` as written plain, in pandas' JSON (``\\/``), in Markdown and in HTML."""
    import html

    markdown = "".join(f"\\{c}" if c in _MARKDOWN else c for c in text)
    return text, text.replace("/", "\\/"), markdown, html.escape(text)


def shown(text: str, message: bool = False) -> str:
    """``text`` with each temporary copy's path replaced by its stream's name: ``-`` in an output,
    ``<stdin>`` in a ``message``; a pipe by its own path. The path is found as each output format
    writes it (plain, JSON, Markdown, HTML) and the name written the same way."""
    for copy, given in _COPIES.items():
        name = (STDIN_MESSAGE if message else STDIN_OUTPUT) if given == "-" else given
        for written, as_name in zip(_forms(copy), _forms(name), strict=True):
            text = text.replace(written, as_name)
    return text
