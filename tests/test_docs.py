"""The documentation: the generated pages are current, the site builds strictly, the README stays
short and its links lead to files that exist."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_generated_pages_are_what_the_code_gives() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_the_rule_reference_lists_every_rule_and_no_other() -> None:
    from ncu_roof.rules import RULES

    listed = re.findall(r"^## `([\w-]+)`$", (ROOT / "docs" / "rules.md").read_text(), re.M)
    assert listed == [r.id for r in RULES]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs") or (str(Path(sys.executable).with_name("mkdocs"))
                                         if Path(sys.executable).with_name("mkdocs").exists() else None)
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]' installs mkdocs-material)")
    res = subprocess.run([mkdocs, "build", "--strict", "-d", str(tmp_path / "site")], capture_output=True,
                         text=True, cwd=ROOT, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "site" / "rules" / "index.html").is_file()
    # a pipe escaped for a Markdown table prints its backslash inside code: no page may show one
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert [p.relative_to(tmp_path) for p in pages if "\\|" in p.read_text(encoding="utf-8")] == []
    assert len(pages) > 10


def test_generated_table_cells_keep_a_pipe_in_code_readable() -> None:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    gen_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_docs)
    assert gen_docs._md("a|b `x|y<z` `k`\nnext") == "a\\|b <code>x&#124;y&lt;z</code> `k` next"


def test_the_readme_is_short_and_its_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    table = re.search(r"<!-- benchmarks:.*?<!-- /benchmarks -->", readme, re.S)
    generated = table.group(0).count("\n") if table else 0  # benchmarks/table.py's: one line per figure
    assert readme.count("\n") - generated < 150
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def test_the_readme_s_example_output_is_what_the_tool_prints(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.cli.test_cli import run

    monkeypatch.setenv("COLUMNS", "100")  # the README's output, from a 100-column terminal
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```text\n(.*?)```", readme, re.S)
    assert block is not None
    command = re.search(r"`ncu-roof diagnose (\.\./shared/realdata/[^`]+)`", readme)
    assert command is not None
    out = run("diagnose", str(realdata / command.group(1).split("realdata/", 1)[1]), cwd=ROOT)
    printed = out.stdout.splitlines()
    assert [line for line in block.group(1).splitlines() if line and line not in printed] == []


def test_getting_started_is_for_users_and_contributing_holds_the_internals() -> None:
    """A new user's page carries no contributor internals (the test run, the reader's insides, the
    module moves); those are on docs/contributing.md, which the site's navigation lists."""
    users = (ROOT / "docs" / "getting-started.md").read_text()
    contributing = (ROOT / "docs" / "contributing.md").read_text()
    internals = ("python -m pytest", "xdist", "conftest", "189 MB", "native/wire.py", "os.pread",
                 "former top-level modules", "NCU_ROOF_SHARED")
    assert [word for word in internals if word in users] == []
    assert [word for word in internals if word not in contributing] == []
    assert "](contributing.md)" in users and "getting-started.md" in contributing
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "contributing.md" in nav and nav.index("getting-started.md") < nav.index("contributing.md")
