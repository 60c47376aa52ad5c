"""The package's layout: imports flow one way (no cycles), modules stay small, stages say what they do.

The import graph is read with ``ast`` (every ``import`` anywhere in a module, function-level ones
included), not by importing, so it sees what a lazy import would do at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ncu_roof"
MAX_LINES = 520  # "about 500"
# Data tables, not logic: allowed to be long.
DATA_TABLES = {"ncu_roof.read.metrics", "ncu_roof.devices"}
STAGES = ("read", "model", "rules", "comparison", "render", "render.charts", "store", "cli")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (``from a import b``: ``a.b`` if it is a module)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    found.add(full)
                elif base in modules:
                    found.add(base)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports() -> None:
    graph = import_graph()
    # ncu_roof.load imports the table lazily, inside the function
    assert "ncu_roof.read.table" in graph["ncu_roof"]


def test_modules_stay_small() -> None:
    too_long = {}
    for name, path in _modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if name not in DATA_TABLES and lines > MAX_LINES:
            too_long[name] = lines
    assert not too_long, f"split these along their seams (limit {MAX_LINES} lines): {too_long}"


def test_every_stage_says_what_enters_and_what_leaves() -> None:
    for stage in STAGES:
        init = PACKAGE.joinpath(*stage.split("."), "__init__.py")
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "Enters" in doc and "Leaves" in doc, f"ncu_roof.{stage}: its docstring says what enters and leaves"


def test_architecture_names_files_that_exist() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    import re

    named = set(re.findall(r"`((?:ncu_roof|tests|capture)/[\w/.-]+\.(?:py|md|sh|toml))`", text))
    assert named, "ARCHITECTURE.md names the files to copy"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"ARCHITECTURE.md names files that do not exist: {missing}"


# ARCHITECTURE.md's order
PIPELINE = ("read", "model", "rules", "diagnosis", "comparison", "render", "store", "api", "cli")


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return PIPELINE.index(parts[1]) if len(parts) > 1 and parts[1] in PIPELINE else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a stage to a later one (``read`` -> ``model``), against ARCHITECTURE.md's flow."""
    return sorted(f"{name} -> {dep}" for name, deps in graph.items() for dep in deps
                  if (a := _stage(name)) is not None and (b := _stage(dep)) is not None and b > a)


def test_imports_flow_down_the_pipeline() -> None:
    assert upward_imports(import_graph()) == []


def test_the_flow_check_finds_an_upward_import() -> None:
    graph = {"ncu_roof.read.table": {"ncu_roof.devices", "ncu_roof.model.roofline"},
             "ncu_roof.render.text": {"ncu_roof.diagnosis", "ncu_roof.fmt"}}
    assert upward_imports(graph) == ["ncu_roof.read.table -> ncu_roof.model.roofline"]


# Test files at the top of tests/: only the cross-cutting ones, each named for what it checks; every
# other test sits beside the stage it tests (tests/read, tests/model, tests/rules, ...).
TOP_LEVEL_TESTS = {
    "test_bad_inputs.py": "every damaged or foreign input: a note or one line and exit 2, across the stages",
    "test_devices.py": "the device table (ncu_roof/devices.py)",
    "test_docs.py": "the documentation: generated pages current, the site builds, the README short",
    "test_docs_commands.py": "every command in the docs runs as written, every option they name exists",
    "test_fuzz.py": "property tests over mutated real rows and reports",
    "test_golden_outputs.py": "every output format on the fixtures, against reviewed files",
    "test_kernels.py": "the kernels with known answers (kernels/)",
    "test_layout.py": "this file: imports, module sizes, test placement",
    "test_lint.py": "ruff and mypy",
    "test_mutation_tool.py": "scripts/mutation_test.py",
    "test_reportgen.py": "the tests' own .ncu-rep writer (tests/reportgen.py)",
}


def test_top_level_test_files_are_the_cross_cutting_ones() -> None:
    found = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    assert found == sorted(TOP_LEVEL_TESTS), "move a stage's tests beside it (tests/<stage>/) or name it here"


# --- functions ---------------------------------------------------------------------------------
MAX_FUNCTION_LINES = 60
# The diagnosis's options travel as one DiagnoseRequest; only the public faces take them one by one:
# the library's documented calls and the MCP tool (its parameters are the tool's schema).
DIAGNOSIS_OPTIONS = {"algorithmic", "ceilings", "device"}
TAKE_THEM_ONE_BY_ONE = {"ncu_roof.api.diagnose", "ncu_roof.api.compare", "ncu_roof.mcp_server.diagnose"}


def _functions(source: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def long_functions(source: str) -> list[str]:
    """The functions of ``source`` longer than MAX_FUNCTION_LINES, from ``def`` to their last line."""
    return [f"{f.name} (line {f.lineno}: {size} lines)" for f in _functions(source)
            if (size := (f.end_lineno or f.lineno) - f.lineno + 1) > MAX_FUNCTION_LINES]


def test_functions_stay_short() -> None:
    found = {name: long for name, path in _modules().items() if (long := long_functions(path.read_text("utf-8")))}
    assert not found, f"split these along their seams (limit {MAX_FUNCTION_LINES} lines): {found}"


def test_the_length_check_finds_a_long_function() -> None:
    body = [f"    x = {i}" for i in range(MAX_FUNCTION_LINES)]
    assert long_functions("\n".join(["def f():", *body])) == ["f (line 1: 61 lines)"]
    assert long_functions("\n".join(["def f():", *body[1:]])) == []


def takers(modules: dict[str, Path]) -> set[str]:
    """The functions whose parameters name all of the diagnosis's options."""
    found = set()
    for name, path in modules.items():
        for f in _functions(path.read_text(encoding="utf-8")):
            a = f.args
            if DIAGNOSIS_OPTIONS <= {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}:
                found.add(f"{name}.{f.name}")
    return found


def test_the_diagnosis_options_travel_as_one_request() -> None:
    assert takers(_modules()) == TAKE_THEM_ONE_BY_ONE


def test_the_request_check_finds_a_taker(tmp_path: Path) -> None:
    (tmp_path / "cli.py").write_text("def command(reports, algorithmic=None, ceilings=None, *, device=None): ...\n"
                                     "def other(reports, algorithmic=None): ...\n")
    assert takers({"ncu_roof.cli": tmp_path / "cli.py"}) == {"ncu_roof.cli.command"}
