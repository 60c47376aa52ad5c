"""Short human-readable numbers for messages and tables: times, SI-prefixed quantities, percents;
kernel names cut to a width.

Unknown values (None or NaN) print as :data:`UNKNOWN` (``-``, as in a table's empty cell); never
``nan`` or ``?``. Times are whole nanoseconds at most (ncu's clock does not resolve less).
"""

from __future__ import annotations

UNKNOWN = "-"


def fmt_seconds(seconds: float | None) -> str:
    """``1.23 ms``-style time with three significant digits (s, ms, us or ns)."""
    if seconds is None or seconds != seconds:
        return UNKNOWN
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(float(f"{seconds:.3g}")) >= scale:  # 999.7 us rounds to 1 ms, not "1e+03 us"
            return f"{seconds / scale:.3g} {unit}"
    if seconds == 0:
        return "0 ns"
    if abs(seconds) < 0.5e-9:
        return "<1 ns" if seconds > 0 else "-<1 ns"
    return f"{seconds / 1e-9:.0f} ns"


def prose_seconds(seconds: float | None) -> str:
    """:func:`fmt_seconds` for a sentence: ``unknown`` where the duration is."""
    return "unknown" if seconds is None or seconds != seconds else fmt_seconds(seconds)


def fmt_si(value: float | None, unit: str, *, kilo: str = "k") -> str:
    """``4.56 GB/s``-style value with an SI prefix (P, T, G, M, ``kilo``) and three significant digits."""
    if value is None or value != value:
        return UNKNOWN
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), (kilo, 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_pct(value: float | None) -> str:
    """A percent rounded to a whole number, e.g. ``42%``."""
    return UNKNOWN if value is None or value != value else f"{value:.0f}%"


def plural(n: int, word: str) -> str:
    """``1 kernel``, ``2 kernels``, ``1 launch``, ``3 launches``."""
    tail = "" if n == 1 else ("es" if word.endswith(("ch", "sh", "s", "x")) else "s")
    return f"{n} {word}{tail}"


PROSE_WIDTH = 100  # columns prose is wrapped to when no terminal width is known


def terminal_width() -> int | None:
    """The terminal's columns: ``$COLUMNS``, else stdout's terminal, else None (a file or pipe:
    tables are then printed whole). At least 60."""
    import os
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(60, int(columns))
    try:
        if sys.stdout.isatty():
            return max(60, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        pass
    return None


def wrap(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    """``text`` wrapped to ``width`` columns, the first line led by ``first``, the rest by ``indent``;
    long words (paths, kernel names) are never broken."""
    import textwrap

    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def unique_short_names(names: list[str], width: int) -> list[str]:
    """Each name cut to ``width`` like :func:`short_name`, except that names whose cut forms
    collide keep their distinguishing end: ``compute_t…x_279_gpu`` beside ``compute_t…x_309_gpu``."""
    first = [short_name(n, width) for n in names]
    cut = list(first)
    for i, name in enumerate(names):
        others = [str(m) for j, m in enumerate(names) if j != i and first[j] == first[i] and str(m) != str(name)]
        text = str(name)
        if not others or len(text) <= width:
            continue
        for tail in range(min(9, width - 5), width - 1):
            head = width - 1 - tail
            form = text[:head] + "…" + text[-tail:]
            if all(form != (o[:head] + "…" + o[-tail:] if len(o) > width else o) for o in others):
                cut[i] = form
                break
    return cut


def short_name(name: str, width: int = 40) -> str:
    """A name (a kernel's, a device's) cut to ``width`` characters, an ellipsis marking the cut."""
    text = str(name)
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"
