"""Outputs of two versions of ncu-roof compared byte for byte: the speed work must not change a
character of any diagnosis.

Each version (a checkout: this one and, by default, the main worktree beside it) diagnoses the same
inputs in its own process, with its own code first on ``PYTHONPATH``, and writes each one's text,
Markdown, JSON and HTML; then every file is compared. The inputs: the synthetic fixtures, the trap
zoo of ``tests/test_golden_outputs.py``, the real reports and exports the JSON-columns test uses
(from ``$NCU_ROOF_SHARED``, default ``../shared``), and the benchmarks' own: a ``--set full`` CSV
of ``--launches`` launches (its real report exported by ncu where found, as ``run.py`` builds it),
the 475-column CSV and a ``.ncu-rep`` of copied launches.

    python benchmarks/identity.py [--base /work/main] [--launches 10000] [--keep DIR]

Exit status 1 when an output differs (the first differing line of each is printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FORMATS = ("text", "markdown", "json", "html")
sys.path.insert(0, str(ROOT / "tests"))
from samples import REAL_SAMPLE as REAL  # noqa: E402 - the tests' helper modules are found by path
from samples import SYNTHETIC_FIXTURES as SYNTHETIC  # noqa: E402


def render(out: Path, work: Path, inputs: list[str]) -> None:
    """In the version under test (``sys.path`` set by the caller): every input's outputs into ``out``."""
    from ncu_roof.api import diagnose
    from ncu_roof.diagnosis import Diagnosis
    from ncu_roof.render.html import render_html
    from ncu_roof.render.markdown import render_markdown
    from ncu_roof.render.renderers import render_json, render_text

    def write(stem: str, d: Diagnosis) -> None:
        texts = {"text": render_text(d, width=None), "markdown": render_markdown(d), "json": render_json(d),
                 "html": render_html(d, "ncu-roof report")}
        for fmt, text in texts.items():
            (out / f"{stem}.{fmt}").write_text(text, encoding="utf-8")

    from tests.test_golden_outputs import diagnose_zoo

    zoo = work / "zoo"
    zoo.mkdir(exist_ok=True)
    write("trap_zoo", diagnose_zoo(zoo))
    layernorm = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm.toml"
    for i, path in enumerate(inputs):
        algorithmic = layernorm if "layernorm" in path else None
        write(f"{i:02d}_{Path(path).name}", diagnose([path], algorithmic=algorithmic).diagnosis)


def inputs(work: Path, launches: int) -> list[str]:
    """The inputs both versions diagnose (the benchmark inputs built into ``work``)."""
    sys.path[:0] = [str(ROOT), str(HERE)]
    import bench_csv
    import bench_ncu_rep
    import run

    paths = [str(ROOT / "fixtures" / "synthetic" / name) for name in SYNTHETIC]
    shared = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared")) / "realdata"
    paths += [str(shared / name) for name in REAL if (shared / name).is_file()]
    export = work / "full_export.csv"
    print(f"full-set CSV copies {bench_csv.export_full(export, run.find_ncu())}", flush=True)
    for name, source in (("full.csv", export), ("raw475.csv", None)):
        bench_csv.build(work / name, launches, source=source)
        paths.append(str(work / name))
    build, what = bench_ncu_rep.builder(synthetic=False)
    build(work / "copies.ncu-rep", max(launches // 20, 2))
    print(f"the report copies {what}", flush=True)
    return [*paths, str(work / "copies.ncu-rep")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/work/main"), help="the other checkout")
    parser.add_argument("--launches", type=int, default=10_000, help="launches of the benchmark CSVs")
    parser.add_argument("--keep", type=Path, help="a folder to keep the inputs and outputs in")
    parser.add_argument("--render", nargs="+", help=argparse.SUPPRESS)  # OUT WORK INPUT...: one version's pass
    args = parser.parse_args()
    if args.render:
        render(Path(args.render[0]), Path(args.render[1]), args.render[2:])
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="ncu-roof-identity-"))
    work.mkdir(parents=True, exist_ok=True)
    paths = inputs(work, args.launches)
    outs = {}
    for label, tree in (("base", args.base.resolve()), ("this", ROOT)):
        out = outs[label] = work / f"out-{label}"
        out.mkdir(exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, str(HERE / "identity.py"), "--render", str(out), str(work), *paths],
                       check=True, cwd=tree, env=env)
    names = sorted(p.name for p in outs["base"].iterdir())
    differ = [n for n in names if (outs["base"] / n).read_bytes() != (outs["this"] / n).read_bytes()]
    for n in differ:
        old, new = ((outs[s] / n).read_text(encoding="utf-8").splitlines() for s in ("base", "this"))
        line = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        print(f"DIFFERS {n} at line {line + 1}:\n  base: {old[line:line + 1]}\n  this: {new[line:line + 1]}")
    print(f"{len(names) - len(differ)} of {len(names)} outputs identical ({len(paths) + 1} inputs x "
          f"{len(FORMATS)} formats) against {args.base}")
    return 1 if differ or not names else 0


if __name__ == "__main__":
    sys.exit(main())
