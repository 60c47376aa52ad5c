"""Write the generated pages of the documentation: the rule reference and the JSON contract.

``python scripts/gen_docs.py`` rewrites ``docs/rules.md`` and ``docs/json.md`` from the code (the
rule registry, ``Thresholds`` and its comments, a diagnosis of the shipped synthetic fixtures);
``--check`` exits 1 when a committed page differs from what the code gives (the tests run it).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIXTURES = sorted((ROOT / "fixtures" / "synthetic").glob("synthetic_*.csv"))
SIDECAR = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm.toml"


def _examples() -> dict[str, str]:
    """The first message each rule gives on the shipped fixtures (with the layernorm sidecar)."""
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.errors import NcuRoofError

    out: dict[str, str] = {}
    for path in FIXTURES:
        try:
            sidecar = SIDECAR if "layernorm" in path.name else None
            d = diagnose_paths([path], algorithmic=sidecar)
        except NcuRoofError:
            continue
        for f in d.findings:
            out.setdefault(f.rule, f"{f.message} ({path.name})")
    return out


def _thresholds() -> list[tuple[str, str, str]]:
    """(name, default, what it decides) of every Thresholds field, from the class's own comments."""
    from ncu_roof.model import roofline

    source = Path(roofline.__file__).read_text(encoding="utf-8")
    body = source[source.index("class Thresholds"):]
    body = body[: body.index("\n\n\n")]
    defaults = roofline.Thresholds()
    rows = []
    pending = ""
    for line in body.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending = (pending + " " + stripped.lstrip("# ")).strip()
            continue
        m = re.match(r"(\w+): float = [^#]+(?:#\s*(.*))?$", stripped)
        if m:
            rows.append((m.group(1), f"{getattr(defaults, m.group(1)):g}", (m.group(2) or pending).strip()))
            pending = ""
    return rows


def _md(text: str) -> str:
    """Text for a Markdown table cell: one line, a pipe escaped (``\\|``), or in code an HTML code
    element with ``&#124;`` (a backslash in a code span is printed as it stands)."""
    def code(m: re.Match[str]) -> str:
        inner = m.group(1)
        return f"<code>{html.escape(inner, quote=False).replace('|', '&#124;')}</code>" if "|" in inner else m.group(0)

    return re.sub(r"`([^`\n]+)`", code, text).replace("|", "\\|").replace("\n", " ")


def rules_page() -> str:
    from ncu_roof.rules import RULES

    examples = _examples()
    lines = ["# Rule reference", "",
             "Generated from the rule registry (`python scripts/gen_docs.py`; the tests check it is current).",
             "Each rule runs where at least one launch has what it **needs**; it also **reads** the other",
             "columns listed (a capture should collect them). The example is its first message on the",
             "synthetic fixtures shipped in `fixtures/`, where one fires.", ""]
    for r in RULES:
        doc = " ".join((r.func.__doc__ or "").split())
        lines += [f"## `{r.id}`", "", doc, "",
                  f"- module: `{r.func.__module__}`",
                  f"- needs: {', '.join(' or '.join(f'`{c}`' for c in n.split('|')) for n in r.needs) or '(nothing)'}"
                  + (" and algorithmic counts" if r.needs_regions else ""),
                  f"- reads: {', '.join(f'`{c}`' for c in r.reads) or '(nothing else)'}",
                  f"- to enable: {r.enable or '-'}",
                  f"- example: {examples[r.id]}" if r.id in examples else "- example: (none among the fixtures)",
                  ""]
    lines += ["## Thresholds", "", "Every number a rule cuts at (`ncu_roof.model.roofline.Thresholds`):", "",
              "| name | default | what it decides |", "|---|---|---|"]
    lines += [f"| `{n}` | {d} | {_md(w)} |" for n, d, w in _thresholds()]
    return "\n".join(lines) + "\n"


def _shape(value: Any, depth: int = 0) -> list[str]:
    """The keys of a JSON value with their types, indented (lists by their first element)."""
    pad = "  " * depth
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            kind = type(v).__name__ if v is not None else "null"
            kind = {"dict": "object", "list": "array", "str": "string", "float": "number", "int": "number",
                    "bool": "boolean"}.get(kind, kind)
            out.append(f"{pad}- `{k}`: {kind}")
            if isinstance(v, dict):
                out += _shape(v, depth + 1)
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                out += _shape(v[0], depth + 1)
    return out


def json_page() -> str:
    from ncu_roof.diagnosis import SCHEMA, diagnose_paths, to_dict

    d = diagnose_paths([ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"],
                       algorithmic=SIDECAR)
    data = json.loads(json.dumps(to_dict(d)))
    lines = ["# The JSON contract", "",
             f"`ncu-roof diagnose --format json` writes schema `{SCHEMA}`. Generated from the code on the",
             "synthetic layernorm fixture (`python scripts/gen_docs.py`): every key, with the JSON type it has",
             "there (arrays by their first element; a key shown as `null` holds a number or a string where",
             "known). Unknown numbers are `null`, never 0.", ""]
    from ncu_roof.rules.base import SourceLine

    line = SourceLine("conv.cu", 44, "conv", (0x1F0,), "l2_sectors_global_excessive", 3.6e9, 0.99, 0.11, None,
                      {"inst_executed": 1.0e6})
    about = ["", "Each finding's `lines` (from the reports' Source Counters: `ncu-roof lines` shows one kernel's) "
             "lists the source lines it points at, largest share first: `file` and `line` (null without a line "
             "table: then `function`, `offsets` and `sass` name the instruction), the `counter` that ranks them and "
             "its `value`, the line's `share` of it and that share of the finding's stake (`time_s`):", ""]
    return "\n".join(lines + _shape(data) + about + _shape(line.as_dict())) + "\n"


PAGES = {"rules.md": rules_page, "json.md": json_page}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a page is not what the code gives")
    args = parser.parse_args(argv)
    stale = []
    for name, make in PAGES.items():
        text = make()
        path = DOCS / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"gen_docs: {', '.join(stale)} out of date: run python scripts/gen_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
