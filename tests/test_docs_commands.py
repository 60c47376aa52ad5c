"""Every command in the docs runs as written, and every option they name exists.

Each ``ncu-roof`` line of a ```sh/```bash block in README.md and docs/*.md is run (in this process,
see ``tests/cli/test_cli.py``'s ``run``) in a temporary folder, one per page, in the page's order:
paths that exist from the repository root (``fixtures/...``, ``../shared/realdata/...``) are
read there, everything else (``-o``, ``--store runs/``) is written in the temporary folder, and a
```toml block whose first line is ``# NAME.toml`` is written there as ``NAME.toml`` first (every
page's, so one page can use another's gate file). A line must exit 0, or the code its comment
documents (``# exits 1``). Not run, with the reason in the test's output: ``capture`` and
``ceilings`` (a GPU and ncu), and a line whose input is neither in the repository nor in the
shared real data (``trace.json.gz``: a reader's own file).

Every ``ncu-roof COMMAND ...`` in the docs (blocks and inline code, synopses included) names only
options that ``ncu-roof COMMAND --help`` lists.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, SHARED

from tests.cli.test_cli import run

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_A_GPU = {"capture": "capture runs ncu on a GPU", "ceilings": "ceilings measures a GPU"}
# options whose value the command writes (or makes): never an input to look for
OUTPUTS = {"-o", "--output", "--chart", "--store", "--suggest-regions", "--summary"}
INPUT_LIKE = re.compile(r"/|\.(ncu-rep|csv|toml|json|gz|html|md|sqlite|nsys-rep)$")


def _blocks(text: str, kinds: tuple[str, ...]) -> list[str]:
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M) if m.group(1) in kinds]


def _commands(text: str) -> list[tuple[str, int]]:
    """The ``ncu-roof`` lines of the page's shell blocks (after ``pip install ... &&``), each with
    the exit code its comment documents (``# exits N``; else 0)."""
    found = []
    for block in _blocks(text, ("sh", "bash")):
        for line in block.splitlines():
            line = line.split("&&")[-1].strip()
            if line.startswith("ncu-roof "):
                code = re.search(r"#.*\bexits (\d)", line)
                found.append((line, int(code.group(1)) if code else 0))
    return found


def _resolve(token: str, here: Path) -> Path | None:
    """An input path as the docs mean it: in the folder the commands run in, from the repository
    root, or under the shared real data (``../shared/``); None where it is in none of them."""
    for base in (here, ROOT):
        if (base / token).exists():
            return (base / token).resolve()
    if token.startswith("../shared/") and (SHARED / token.removeprefix("../shared/")).exists():
        return SHARED / token.removeprefix("../shared/")
    return None


def _arguments(line: str, here: Path) -> tuple[list[str], str]:
    """The line's arguments with each input path made absolute, or the reason it cannot run here."""
    words = shlex.split(line, comments=True)[1:]
    if words and words[0] in NEEDS_A_GPU:
        return [], NEEDS_A_GPU[words[0]]
    args: list[str] = []
    for i, word in enumerate(words):
        writes = i > 0 and words[i - 1] in OUTPUTS
        if writes or word.startswith("-") or not INPUT_LIKE.search(word):
            args.append(word)
            continue
        path = _resolve(word, here)
        if path is None:
            return [], f"{word}: not in the repository or the shared real data"
        args.append(str(path))
    return args, ""


@pytest.mark.parametrize("page", [p for p in PAGES if _commands(p.read_text(encoding="utf-8"))], ids=lambda p: p.name)
def test_every_command_in_the_docs_runs_as_written(page: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands(page.read_text(encoding="utf-8"))
    if any("../shared/" in line for line, _ in commands) and not SHARED.is_dir():
        pytest.skip(f"no {SHARED} (the shared real data)")
    for other in PAGES:
        for block in _blocks(other.read_text(encoding="utf-8"), ("toml",)):
            name = re.match(r"# ([\w.-]+\.toml)\n", block)
            if name:
                (tmp_path / name.group(1)).write_text(block, encoding="utf-8")
    ran, skipped = 0, []
    for line, expected in commands:
        args, why = _arguments(line, tmp_path)
        if why:
            skipped.append(f"{line}  ({why})")
            continue
        result = run(*args, cwd=tmp_path)
        assert result.returncode == expected, (line, result.returncode, result.stderr[-1500:])
        assert "Traceback" not in result.stderr, (line, result.stderr[-1500:])
        ran += 1
    with capsys.disabled():
        for s in skipped:
            print(f"\n{page.name}: not run: {s}", end="")
    assert ran or skipped


def test_the_docs_run_the_examples_a_reader_copies() -> None:
    """The pages whose examples are commands on files of the repository (the quick start, the gate,
    the store) have them in shell blocks, so the test above runs them."""
    runnable = {p.name: [line for line, _ in _commands(p.read_text(encoding="utf-8"))] for p in PAGES}
    assert any("synthetic_layernorm_unfused_rtx5070.csv" in line for line in runnable["README.md"])
    assert sum(line.startswith("ncu-roof check ") for line in runnable["outputs.md"]) == 3
    assert [line.split()[1] for line in runnable["store.md"]] == ["ingest", "ingest", "trend", "query", "check"]


def _options_in(help_text: str) -> set[str]:
    """The options a help page lists, short and long (``-o``, ``--output``)."""
    pairs = re.findall(r"^ {2}(?:(-\w), )?(--[\w-]+)", help_text, re.M)
    return {option for pair in pairs for option in pair if option}


def test_every_option_the_docs_name_exists() -> None:
    """``ncu-roof COMMAND ... --opt`` anywhere in the docs (a synopsis like ``[--chart out.html|.png]``
    too): ``--opt`` is one of the options ``ncu-roof COMMAND --help`` lists."""
    mentions: list[tuple[str, str]] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        spans = re.findall(r"`(ncu-roof [^`]+)`", text)
        spans += [line for block in _blocks(text, ("sh", "bash")) for line in block.splitlines()
                  if line.split("&&")[-1].strip().startswith("ncu-roof ")]
        mentions += [(page.name, span.split("&&")[-1].split(" #")[0].strip()) for span in spans]
    helps: dict[str, set[str]] = {}
    checked = 0
    for page, mention in mentions:
        words = mention.replace("\\|", " ").split()
        command = words[1] if len(words) > 1 and not words[1].startswith("-") else ""
        if command not in helps:
            result = run(*([command] if command else []), "--help")
            assert result.returncode == 0, (page, mention, result.stderr)
            helps[command] = _options_in(result.stdout) | {"--help", "-h"}
        # after a bare `--`, the words are the profiled command's (capture ... -- torchrun ...)
        words = words[: words.index("--")] if "--" in words else words
        for word in words[2 if command else 1:]:
            option = re.match(r"^\[?(--?[a-z][\w-]*)", word)
            if option:
                assert option.group(1) in helps[command], (page, mention, option.group(1))
                checked += 1
    assert checked > 40, checked
