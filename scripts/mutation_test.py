"""Mutation testing of the numeric core: does a wrong number make a test fail?

A small AST mutator, no dependency beyond the standard library. It lists every mutant of the
numeric modules (an arithmetic or comparison operator swapped, a numeric constant nudged, a
condition negated, ``and``/``or`` and ``&``/``|`` swapped, ``not``/``~`` dropped, ``min`` made
``max``, a return emptied), samples ``--sample N`` of them with ``--seed``, and for each one
copies the package, the tests and the fixtures into a temporary folder, writes the mutated
module there (the working tree is never edited), and runs the test files mapped to that module
(``TESTS`` below) with ``pytest -x`` and a per-mutant timeout. A mutant is *killed* when a test
fails (or errors, or times out) and *survives* when every test passes. The kill rate and the
survivors (file:line, the mutation) are printed; survivors listed in
``scripts/mutation_equivalent.txt`` (mutants that cannot change any output, with the reason)
are reported apart and left out of the rate.

    python scripts/mutation_test.py --seed 1 --sample 40            # a sample of every module
    python scripts/mutation_test.py --module units.py --list         # the mutants, not run
    python scripts/mutation_test.py --seed 3 --sample 20 --module rules/traps.py
    python scripts/mutation_test.py --sample 0 --grep "peak_fp32_nofma" --grep "'us': 1e-06"

Not part of the test run (CI): a sample of 40 takes about 4-10 minutes on a 2-core machine.
Set ``NCU_ROOF_SHARED`` as for the tests (default: ``../shared`` beside the repository) so the
tests that read real reports run too.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = Path(__file__).with_name("mutation_equivalent.txt")

# The numeric core and, per module, the test files that exercise it (fast, pinning ones first:
# pytest -x stops at the first failure, so a killed mutant costs seconds).
TESTS: dict[str, tuple[str, ...]] = {
    "ncu_roof/read/units.py": (
        "tests/read/test_units.py",
        "tests/test_golden_outputs.py",
        "tests/read/test_load_csv.py",
        "tests/model/test_roofline.py",
    ),
    "ncu_roof/model/roofline.py": (
        "tests/model/test_placement.py",
        "tests/model/test_roofs.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/model/test_roofline.py",
        "tests/model/test_ceilings_roofs.py",
        "tests/rules/test_rules.py",
    ),
    "ncu_roof/read/normalize.py": (
        "tests/model/test_roofs.py",
        "tests/test_golden_outputs.py",
        "tests/read/test_table.py",
        "tests/model/test_roofline.py",
        "tests/read/test_load_csv.py",
    ),
    "ncu_roof/model/algorithmic.py": (
        "tests/model/test_algorithmic.py",
        "tests/test_golden_outputs.py",
        "tests/model/test_roofline.py",
        "tests/model/test_regions_nvtx.py",
        "tests/rules/test_rules.py",
    ),
    "ncu_roof/rules/checklist.py": (
        "tests/rules/test_checklist.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_rules.py",
    ),
    "ncu_roof/rules/traps.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_rules.py",
        "tests/rules/test_limiter.py",
    ),
    "ncu_roof/rules/occupancy.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/rules/test_ladder.py",
        "tests/rules/test_trust.py",
    ),
    "ncu_roof/rules/partial.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/rules/test_ladder.py",
        "tests/rules/test_rules.py",
    ),
    "ncu_roof/rules/launch.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_rules.py",
        "tests/rules/test_limiter.py",
    ),
    "ncu_roof/rules/stakes.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/rules/test_measured_pairs.py",
        "tests/rules/test_rules.py",
        "tests/rules/test_limiter.py",
    ),
    "ncu_roof/model/chains.py": (
        "tests/model/test_chains.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_limiter.py",
    ),
    "ncu_roof/torch.py": (
        "tests/model/test_torch_ops.py",
    ),
    "ncu_roof/read/cubin.py": (
        "tests/read/test_workload_results.py",
    ),
    "ncu_roof/model/units.py": (
        "tests/rules/test_measured_pairs.py",
        "tests/rules/test_limiter.py",
        "tests/model/test_placement.py",
        "tests/rules/test_thresholds.py",
    ),
    "ncu_roof/rules/signals.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_rules.py",
        "tests/rules/test_limiter.py",
    ),
    "ncu_roof/rules/limiter.py": (
        "tests/rules/test_signals.py",
        "tests/rules/test_limiter.py",
        "tests/rules/test_thresholds.py",
        "tests/test_golden_outputs.py",
        "tests/rules/test_rules.py",
    ),
    "ncu_roof/store/trend.py": (
        "tests/store/test_trend.py",
    ),
    "ncu_roof/store/rows.py": (
        "tests/store/test_trend.py",
        "tests/store/test_ingest.py",
    ),
    "ncu_roof/store/history.py": (
        "tests/store/test_trend.py",
    ),
    "ncu_roof/read/validate.py": (
        "tests/read/test_validate.py",
        "tests/test_bad_inputs.py",
        "tests/test_golden_outputs.py",
        "tests/read/test_load_csv.py",
        "tests/read/test_unseen_report_shapes.py",
    ),
}
COPIED = ("ncu_roof", "tests", "fixtures", "pyproject.toml")

_BINOP_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                                 ast.FloorDiv: ast.Div, ast.Mod: ast.Mult, ast.Pow: ast.Mult,
                                 ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
_CMP_SWAP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                               ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
                               ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_MINMAX = {"min": "max", "max": "min", "fmin": "fmax", "fmax": "fmin", "nanmin": "nanmax", "nanmax": "nanmin",
           "idxmin": "idxmax", "idxmax": "idxmin"}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
           ast.BitAnd: "&", ast.BitOr: "|",
           ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
           ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.And: "and", ast.Or: "or"}


@dataclass(frozen=True)
class Mutant:
    module: str  # path relative to the repository root
    site: int  # index of the node in the module's walk order
    variant: int  # which mutation of that node
    line: int
    col: int
    text: str  # the mutation, e.g. "`<` -> `<=`"
    source_line: str  # the unmutated line, stripped (keys the equivalent list, robust to line shifts)

    @property
    def where(self) -> str:
        return f"{self.module}:{self.line}:{self.col}"


def _skip_ids(tree: ast.AST) -> set[int]:
    """Nodes never mutated: docstrings, annotations, and the constants of string formatting."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.update(id(n) for n in ast.walk(body[0]))
        annotations: list[ast.AST | None] = []
        if isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(node.returns)
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        for a in annotations:
            if a is not None:
                skip.update(id(n) for n in ast.walk(a))
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            skip.update(id(n) for n in ast.walk(node.format_spec))
    return skip


def _variants(node: ast.AST, parent: ast.AST | None) -> list[str]:
    """Descriptions of the mutations of one node (index = variant)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
        return [f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[_BINOP_SWAP[type(node.op)]]}`"]
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINOP_SWAP:
        return [f"`{_SYMBOL[type(node.op)]}=` -> `{_SYMBOL[_BINOP_SWAP[type(node.op)]]}=`"]
    if isinstance(node, ast.Compare):
        return [f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[_CMP_SWAP[type(op)]]}` (comparison {i + 1})"
                for i, op in enumerate(node.ops) if type(op) in _CMP_SWAP]
    if isinstance(node, ast.BoolOp):
        other = "or" if isinstance(node.op, ast.And) else "and"
        return [f"`{_SYMBOL[type(node.op)]}` -> `{other}`"]
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return ["condition negated"]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
        return [f"`{'not' if isinstance(node.op, ast.Not) else '~'}` removed"]
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return [f"constant {node.value!r} -> {v!r}" for v in _nudges(node.value)]
    if isinstance(node, ast.Name) and node.id in ("min", "max") and isinstance(parent, ast.Call) \
            and parent.func is node:
        return [f"`{node.id}` -> `{_MINMAX[node.id]}`"]
    if isinstance(node, ast.Attribute) and node.attr in _MINMAX and isinstance(parent, ast.Call) \
            and parent.func is node:
        return [f"`.{node.attr}` -> `.{_MINMAX[node.attr]}`"]
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        return ["return value -> None"]
    return []


def _nudges(value: float) -> list[float]:
    if isinstance(value, bool):
        return []
    if value == 0:
        return [1]
    out: list[float] = [0, value + 1] if isinstance(value, int) else [0.0, value * 1.1, value + 1.0]
    return out


def _apply(node: ast.AST, variant: int) -> ast.AST:
    """The mutated copy of ``node`` (a replacement node)."""
    new = copy.deepcopy(node)
    if isinstance(new, ast.BinOp):
        new.op = _BINOP_SWAP[type(new.op)]()
    elif isinstance(new, ast.AugAssign):
        new.op = _BINOP_SWAP[type(new.op)]()
    elif isinstance(new, ast.Compare):
        swappable = [i for i, op in enumerate(new.ops) if type(op) in _CMP_SWAP]
        i = swappable[variant]
        new.ops[i] = _CMP_SWAP[type(new.ops[i])]()
    elif isinstance(new, ast.BoolOp):
        new.op = ast.Or() if isinstance(new.op, ast.And) else ast.And()
    elif isinstance(new, (ast.If, ast.While, ast.IfExp)):
        new.test = ast.UnaryOp(op=ast.Not(), operand=new.test)
    elif isinstance(new, ast.UnaryOp):
        return new.operand
    elif isinstance(new, ast.Constant):
        new.value = _nudges(new.value)[variant]
    elif isinstance(new, ast.Name):
        new.id = _MINMAX[new.id]
    elif isinstance(new, ast.Attribute):
        new.attr = _MINMAX[new.attr]
    elif isinstance(new, ast.Return):
        new.value = ast.Constant(value=None)
    return new


def _sites(tree: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
    """Every (node, parent) in a stable walk order."""
    skip = _skip_ids(tree)
    out: list[tuple[ast.AST, ast.AST | None]] = []

    def visit(node: ast.AST, parent: ast.AST | None) -> None:
        if id(node) not in skip:
            out.append((node, parent))
        for child in ast.iter_child_nodes(node):
            visit(child, node)

    visit(tree, None)
    return out


def mutants_of(module: str) -> list[Mutant]:
    source = (ROOT / module).read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    found = []
    for site, (node, parent) in enumerate(_sites(tree)):
        for variant, text in enumerate(_variants(node, parent)):
            line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
            found.append(Mutant(module, site, variant, line, col, text, lines[line - 1].strip() if line else ""))
    return found


def mutated_source(m: Mutant) -> str:
    tree = ast.parse((ROOT / m.module).read_text(encoding="utf-8"))
    sites = _sites(tree)
    node, parent = sites[m.site]
    new = _apply(node, m.variant)
    if parent is None:
        raise ValueError("cannot mutate the module node")
    for field, value in ast.iter_fields(parent):
        if value is node:
            setattr(parent, field, new)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if item is node:
                    value[i] = new
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def read_equivalent(path: Path = EQUIVALENT) -> dict[tuple[str, str, str], str]:
    """``module | source line | mutation | reason`` lines (``#`` starts a comment line)."""
    known: dict[tuple[str, str, str], str] = {}
    if not path.is_file():
        return known
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(" | ")]
        if len(parts) < 4:
            raise SystemExit(f"{path}: expected 'module | source line | mutation | reason': {raw!r}")
        # the source line may hold " | " itself: the module is first, the mutation and reason last
        known[(parts[0], " | ".join(parts[1:-2]), parts[-2])] = parts[-1]
    return known


def _copy_tree(dest: Path) -> None:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*cache"))
        elif src.is_file():
            shutil.copy2(src, dest / name)


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(work), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    env.setdefault("NCU_ROOF_SHARED", str(ROOT.parent / "shared"))
    return env


def run_tests(module: str, source: str | None, timeout: float) -> tuple[str, float, str]:
    """('killed' | 'survived' | 'timeout' | 'error', seconds, last output) for one mutant (None: unmutated)."""
    with tempfile.TemporaryDirectory(prefix="ncu-roof-mutant-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        if source is not None:
            (work / module).write_text(source, encoding="utf-8")
        files = [f for f in TESTS[module] if (work / f).is_file()]
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "--no-header", "-p", "no:cacheprovider",
               "-p", "no:randomly", "-n", "0", *files]
        start = time.monotonic()
        try:
            done = subprocess.run(cmd, cwd=work, env=_env(work), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.monotonic() - start, ""
        took = time.monotonic() - start
        tail = (done.stdout + done.stderr)[-1500:]
        if done.returncode == 0:
            return "survived", took, tail
        if done.returncode == 5:  # no tests collected
            return "error", took, tail
        return "killed", took, tail


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--sample", type=int, default=40, help="mutants to run (0: all)")
    p.add_argument("--module", action="append", help="only this module (e.g. roofline.py, rules/traps.py)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant (a timeout counts as killed)")
    p.add_argument("--grep", action="append",
                   help="only mutants whose 'file:line:col mutation | source line' matches this regex (repeatable)")
    p.add_argument("--list", action="store_true", help="list the sampled mutants, run nothing")
    p.add_argument("--no-baseline", action="store_true", help="skip checking that the unmutated tests pass")
    args = p.parse_args(argv)

    modules = list(TESTS)
    if args.module:
        wanted = [m if m.startswith("ncu_roof/") else f"ncu_roof/{m}" for m in args.module]
        unknown = [m for m in wanted if m not in TESTS]
        if unknown:
            p.error(f"not a numeric-core module: {', '.join(unknown)} (known: {', '.join(TESTS)})")
        modules = wanted
    everything = [m for module in modules for m in mutants_of(module)]
    if args.grep:
        patterns = [re.compile(g) for g in args.grep]
        everything = [m for m in everything
                      if any(p.search(f"{m.where} {m.text} | {m.source_line}") for p in patterns)]
    rng = random.Random(args.seed)
    sample = everything if not args.sample or args.sample >= len(everything) else rng.sample(everything, args.sample)
    sample.sort(key=lambda m: (m.module, m.line, m.col, m.site, m.variant))
    print(f"{len(everything)} mutants in {len(modules)} modules; running {len(sample)} (seed {args.seed})",
          flush=True)
    if args.list:
        for m in sample:
            print(f"{m.where}  {m.text}    | {m.source_line}")
        return 0
    if not args.no_baseline:
        for module in sorted({m.module for m in sample}):
            status, took, tail = run_tests(module, None, args.timeout * 3)
            if status != "survived":
                print(f"baseline: the tests of {module} do not pass unmutated ({status}, {took:.0f}s):\n{tail}")
                return 2
            print(f"baseline {module}: tests pass in {took:.0f}s", flush=True)
    equivalent = read_equivalent()
    results: list[tuple[Mutant, str]] = []
    start = time.monotonic()
    for i, m in enumerate(sample, 1):
        status, took, _ = run_tests(m.module, mutated_source(m), args.timeout)
        if status == "survived" and (m.module, m.source_line, m.text) in equivalent:
            status = "equivalent"
        results.append((m, status))
        print(f"[{i}/{len(sample)}] {status:10s} {took:5.0f}s  {m.where}  {m.text}", flush=True)
    return _report(results, equivalent, time.monotonic() - start)


def _report(results: list[tuple[Mutant, str]], equivalent: dict[tuple[str, str, str], str], seconds: float) -> int:
    counted = [(m, s) for m, s in results if s not in ("equivalent", "error")]
    killed = sum(s in ("killed", "timeout") for _, s in counted)
    print(f"\n{killed}/{len(counted)} killed ({100 * killed / max(len(counted), 1):.1f}%) in {seconds / 60:.1f} min;"
          f" {sum(s == 'equivalent' for _, s in results)} equivalent, {sum(s == 'error' for _, s in results)} errors,"
          f" {sum(s == 'timeout' for _, s in results)} timeouts (counted as killed)")
    by_module: dict[str, list[str]] = {}
    for m, s in counted:
        by_module.setdefault(m.module, []).append(s)
    for module, states in sorted(by_module.items()):
        k = sum(s in ("killed", "timeout") for s in states)
        print(f"  {module}: {k}/{len(states)}")
    survivors = [m for m, s in results if s == "survived"]
    if survivors:
        print("\nsurvivors:")
        for m in survivors:
            print(f"  {m.where}  {m.text}    | {m.source_line}")
    eq = [m for m, s in results if s == "equivalent"]
    if eq:
        print("\nequivalent (scripts/mutation_equivalent.txt):")
        for m in eq:
            print(f"  {m.where}  {m.text}: {equivalent[(m.module, m.source_line, m.text)]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
