"""Output formats, one registry: what each command can write, by ``--format`` name and by suffix.

Every command follows one rule: ``--format`` wins; else the ``-o`` file's suffix picks the
format; a suffix the command cannot write is refused (one line, exit 2); no ``-o`` or a file
without a suffix gets the command's default (the first format listed).
"""

from __future__ import annotations

from pathlib import Path

from ncu_roof.errors import InputError

SUFFIXES = {"text": (".txt",), "markdown": (".md", ".markdown"), "json": (".json",), "csv": (".csv",),
            "html": (".html", ".htm"), "digest": ()}

# command -> the formats it writes, default first; and where to go for the ones it does not
COMMAND_FORMATS: dict[str, tuple[str, ...]] = {
    "table": ("csv", "json"),
    "diagnose": ("text", "markdown", "json", "digest", "html"),
    "compare": ("text", "markdown", "json"),
    "check": ("text", "json"),
    "report": ("html",),
    "trend": ("text", "markdown", "json"),
    "query": ("text", "csv", "json", "markdown"),
    "timeline": ("text", "markdown", "json", "html"),
}
ELSEWHERE = {"html": "`ncu-roof report -o page.html` writes the HTML page (or --chart x.html for the chart alone)"}


def pick_format(command: str, fmt: str | None, output: Path | None) -> str:
    """The format ``command`` writes: ``fmt``, else by the suffix of ``output``, else the default."""
    formats = COMMAND_FORMATS[command]
    if fmt is not None:
        if fmt not in formats:
            raise InputError(f"{command} cannot write {fmt!r}: choose {_choices(formats)}")
        return fmt
    if output is None or not output.suffix:
        return formats[0]
    suffix = output.suffix.lower()
    for name in formats:
        if suffix in SUFFIXES[name]:
            return name
    other = next((n for n, sfx in SUFFIXES.items() if suffix in sfx), None)
    hint = f"; {ELSEWHERE[other]}" if other in ELSEWHERE else ""
    allowed = _choices(tuple(SUFFIXES[n][0] for n in formats if SUFFIXES[n]))  # digest has no suffix
    raise InputError(
        f"{command} cannot write {output.name}: name the file {allowed}, or pass --format{hint}"
    )


def _choices(formats: tuple[str, ...]) -> str:
    return ", ".join(formats[:-1]) + f" or {formats[-1]}" if len(formats) > 1 else formats[0]
