"""``ncu-roof capture --timeline``: the recorder chosen (a PyTorch profiler trace where torch is
importable, else Nsight Systems), the command lines built, the dry run, and the separate timeline
run after ncu's, with the ``ncu-roof timeline`` command printed next.

Without a GPU: fake ``ncu`` and ``nsys`` executables stand in for the tools; the PyTorch recorder
runs for real on CPU-only torch where it is installed.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, ncu_env

from ncu_roof import capture as cap
from ncu_roof import capture_timeline as tl
from ncu_roof.errors import CaptureError


def _opts(**kw: object) -> cap.CaptureOptions:
    base: dict[str, object] = dict(script=Path("work/train.py"), report=Path("out/run"), ncu=Path("/opt/ncu"),
                                   python=Path("/usr/bin/python3"), cc=(9, 0), script_args=("--n", "8"))
    base.update(kw)
    return cap.CaptureOptions(**base)  # type: ignore[arg-type]


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# --- the plan: which recorder, which commands -----------------------------------------------
def test_torch_where_the_script_s_python_has_it() -> None:
    plan = tl.plan_timeline(_opts(), "auto", torch_ok=True, nsys=Path("/opt/nsys"))
    assert plan.recorder == "torch" and plan.trace == Path("out/run.trace.json") and plan.note == ""
    assert plan.commands == (("/usr/bin/python3", "-m", "ncu_roof.torch_trace", "out/run.trace.json",
                              "work/train.py", "--n", "8"),)
    module = tl.plan_timeline(_opts(script=None, module="pkg.bench"), "auto", torch_ok=True, nsys=None)
    assert module.commands[0][3:] == ("out/run.trace.json", "-m", "pkg.bench", "--n", "8")
    assert "record_shapes, with_stack" in plan.words and "not under ncu" in plan.words


def test_nsys_for_a_command_or_without_torch() -> None:
    torchrun = _opts(script=None, program=("torchrun", "--nproc-per-node", "2", "train.py"), script_args=())
    plan = tl.plan_timeline(torchrun, "auto", torch_ok=True, nsys=Path("/opt/nsys/bin/nsys"))
    assert plan.recorder == "nsys" and plan.trace == Path("out/run.sqlite")
    assert plan.commands == (
        ("/opt/nsys/bin/nsys", "profile", "--trace", "cuda,nvtx", "--output", "out/run",
         "torchrun", "--nproc-per-node", "2", "train.py"),
        ("/opt/nsys/bin/nsys", "export", "--type", "sqlite", "--output", "out/run.sqlite", "out/run.nsys-rep"))
    # no torch: nsys, overwriting with --force; op regions (--torch-ops) stay out of the timeline run
    forced = tl.plan_timeline(_opts(force=True, torch_ops=True, report=Path("r.ncu-rep")), "auto", torch_ok=False,
                              nsys=Path("nsys"))
    assert forced.commands[0] == ("nsys", "profile", "--trace", "cuda,nvtx", "--force-overwrite", "true",
                                  "--output", "r", "/usr/bin/python3", "work/train.py", "--n", "8")
    assert forced.commands[1] == ("nsys", "export", "--type", "sqlite", "--force-overwrite", "true",
                                  "--output", "r.sqlite", "r.nsys-rep")
    chosen = tl.plan_timeline(_opts(), "nsys", torch_ok=True, nsys=Path("nsys"))
    assert chosen.recorder == "nsys"


def test_what_is_missing_fails_except_in_a_dry_run() -> None:
    with pytest.raises(CaptureError) as err:
        tl.plan_timeline(_opts(), "auto", torch_ok=False, nsys=None)
    assert str(err.value) == ("--timeline needs torch importable by /usr/bin/python3 (a PyTorch profiler trace) or "
                              "nsys (Nsight Systems: on PATH, $NSYS or a CUDA folder); neither is here")
    with pytest.raises(CaptureError, match=r"^--timeline-with torch runs a Python script or module"):
        tl.plan_timeline(_opts(script=None, program=("pytest",)), "torch", torch_ok=True, nsys=None)
    with pytest.raises(CaptureError, match=r"^--timeline-with torch: torch is not importable by /usr/bin/python3"):
        tl.plan_timeline(_opts(), "torch", torch_ok=False, nsys=None)
    with pytest.raises(CaptureError, match=r"^--timeline-with nsys: nsys not found"):
        tl.plan_timeline(_opts(), "nsys", torch_ok=True, nsys=None)
    dry = tl.plan_timeline(_opts(), "auto", torch_ok=False, nsys=None, dry_run=True)
    assert dry.recorder == "nsys" and dry.commands[0][0] == "nsys" and dry.note.endswith("name plain `nsys`")


def test_finding_nsys(tmp_path: Path) -> None:
    nsys = _exe(tmp_path / "nsys", "#!/bin/sh\n")
    assert tl.find_nsys({"NSYS": str(nsys), "PATH": "/nonexistent"}, globs=()) == nsys
    assert tl.find_nsys({"PATH": str(tmp_path)}, globs=()) == nsys
    (tmp_path / "opt" / "2024.1" / "bin").mkdir(parents=True)
    (tmp_path / "opt" / "2025.2" / "bin").mkdir(parents=True)
    old = _exe(tmp_path / "opt" / "2024.1" / "bin" / "nsys", "")
    new = _exe(tmp_path / "opt" / "2025.2" / "bin" / "nsys", "")
    assert tl.find_nsys({"PATH": "/nonexistent"}, globs=(str(tmp_path / "opt" / "*" / "bin" / "nsys"),)) == new != old
    assert tl.find_nsys({"PATH": "/nonexistent"}, globs=()) is None


def test_torch_is_looked_for_in_the_program_s_python(tmp_path: Path) -> None:
    yes = _exe(tmp_path / "py-yes", "#!/bin/sh\nexit 0\n")
    no = _exe(tmp_path / "py-no", "#!/bin/sh\nexit 1\n")
    assert tl.torch_importable(yes) and not tl.torch_importable(no)
    assert not tl.torch_importable(tmp_path / "missing-python")


def test_next_command_names_the_trace_and_each_report() -> None:
    plan = tl.plan_timeline(_opts(), "auto", torch_ok=True, nsys=None)
    reports = [Path("out/run.rank0.ncu-rep"), Path("out/my run.rank1.ncu-rep")]
    assert tl.next_command(plan, reports) == ("ncu-roof timeline out/run.trace.json --report out/run.rank0.ncu-rep "
                                              "--report 'out/my run.rank1.ncu-rep'")


# --- the command line -----------------------------------------------------------------------
def _cli(args: list[str], tmp_path: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(ncu_env(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("NSYS", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "ncu_roof", "capture", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)


def test_dry_run_says_which_recorder(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "k.py").write_text("")
    res = _cli(["k.py", "--dry-run", "--timeline", "--cc", "9.0", "-o", "run", "--ncu", sys.executable], tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index("metrics:")
    assert lines[at - 3:at] == [
        "timeline: a PyTorch profiler trace (torch.profiler: CPU and CUDA activity, record_shapes, with_stack) from "
        "a separate run of the program, not under ncu",
        f"timeline command: {sys.executable} -m ncu_roof.torch_trace run.trace.json k.py",
        "then: ncu-roof timeline run.trace.json --report run.ncu-rep"]


def test_dry_run_of_a_launcher_under_nsys(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _exe(bin_dir / "nsys", "#!/bin/sh\n")
    res = _cli(["--dry-run", "--timeline", "--cc", "9.0", "-o", "train", "--ncu", sys.executable, "--",
                "torchrun", "--nproc-per-node", "2", "train.py"], tmp_path, path=f"{bin_dir}:/usr/bin:/bin")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    nsys = bin_dir / "nsys"
    assert ("timeline: an Nsight Systems run (nsys profile, then nsys export --type sqlite) separate from ncu's, "
            "its replay left out") in lines
    assert (f"timeline command: {nsys} profile --trace cuda,nvtx --output train torchrun --nproc-per-node 2 "
            "train.py") in lines
    assert f"timeline command: {nsys} export --type sqlite --output train.sqlite train.nsys-rep" in lines
    assert "then: ncu-roof timeline train.sqlite --report 'train.rank*.ncu-rep'" in lines  # each rank's report


FAKE_NCU = """#!{python}
import shutil, subprocess, sys
args = sys.argv[1:]
out = args[args.index("--export") + 1]
script = next(i for i, a in enumerate(args) if a.endswith(".py"))
sys.exit(subprocess.call(args[script - 1:]) or shutil.copyfile({copy!r}, out) and 0)
"""
FAKE_NSYS = """#!{python}
# Stands in for nsys: logs its argv, runs the program (profile) or writes the export.
import os, subprocess, sys
args = sys.argv[1:]
open({log!r}, "a").write(" ".join(args) + "\\n")
out = args[args.index("--output") + 1]
if args[0] == "profile":
    rc = subprocess.call(args[args.index("--output") + 2:], env=dict(os.environ, UNDER_NSYS="1"))
    open(out + ".nsys-rep", "wb").write(b"nsys")
    sys.exit(rc)
open(out, "wb").write(b"SQLite format 3\\0")
"""


def test_the_timeline_runs_apart_from_ncu_then_names_the_next_command(tmp_path: Path, realdata: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    ncu = _exe(tmp_path / "ncu", FAKE_NCU.format(python=sys.executable, copy=str(report)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "nsys.log"
    _exe(bin_dir / "nsys", FAKE_NSYS.format(python=sys.executable, log=str(log)))
    _exe(tmp_path / "app.py", "import sys\nprint('app ran')\nsys.exit(int(sys.argv[1]))\n")
    args = ["app.py", "--ncu", str(ncu), "--cc", "7.0", "-o", "mw", "--no-diagnose", "--timeline",
            "--timeline-with", "nsys", "--python", sys.executable, "--", "0"]
    res = _cli(args, tmp_path, path=f"{bin_dir}:/usr/bin:/bin")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["app ran", "app ran"]  # once under ncu, once under nsys
    assert log.read_text().splitlines() == [
        f"profile --trace cuda,nvtx --output mw {sys.executable} app.py 0",
        "export --type sqlite --output mw.sqlite mw.nsys-rep"]
    err = res.stderr.splitlines()
    assert "ncu-roof: timeline written: mw.sqlite" in err
    assert err[-1] == "ncu-roof: next: ncu-roof timeline mw.sqlite --report mw.ncu-rep"
    # the trace is there: refused before anything runs, unless --force
    again = _cli([*args[:-1], "1"], tmp_path, path=f"{bin_dir}:/usr/bin:/bin")
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip().splitlines()[-1].startswith("ncu-roof: error: report mw.ncu-rep already exists")
    (tmp_path / "mw.ncu-rep").unlink()
    again = _cli([*args[:-1], "1"], tmp_path, path=f"{bin_dir}:/usr/bin:/bin")
    assert again.returncode == 2
    assert again.stderr.strip().splitlines()[-1] == ("ncu-roof: error: timeline mw.sqlite already exists: pass "
                                                     "--force to overwrite it or -o to choose another")
    # a timeline run that fails keeps its code and the report
    (tmp_path / "app.py").write_text("import os, sys\nprint('app ran')\n"
                                     "sys.exit(3 if 'UNDER_NSYS' in os.environ else 0)\n")
    failed = _cli([*args[:-2], "--force", "--", "0"], tmp_path, path=f"{bin_dir}:/usr/bin:/bin")
    assert failed.returncode == 3 and (tmp_path / "mw.ncu-rep").is_file()
    assert failed.stderr.strip().splitlines()[-1] == (
        "ncu-roof: error: the timeline run (nsys profile) failed with exit code 3 (its output is above); the report "
        "is kept")


def test_a_pytorch_trace_beside_the_report(tmp_path: Path, realdata: Path) -> None:
    pytest.importorskip("torch")
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    ncu = _exe(tmp_path / "ncu", FAKE_NCU.format(python=sys.executable, copy=str(report)))
    (tmp_path / "helper.py").write_text("def work(torch):\n    return torch.ones(64, 32) @ torch.ones(32, 16)\n")
    _exe(tmp_path / "model.py", "import sys\nimport torch\nfrom helper import work\n"
         "print(work(torch).sum().item())\nsys.exit(0)\n")
    res = _cli(["model.py", "--ncu", str(ncu), "--cc", "7.0", "-o", "mw", "--no-diagnose", "--timeline",
                "--python", sys.executable], tmp_path, path="/usr/bin:/bin")
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()  # the program's output under ncu, then under the profiler (and Kineto's)
    assert out.count("32768.0") == 2 and out[-1] == "ncu_roof.torch_trace: trace written: mw.trace.json"
    assert res.stderr.splitlines()[-1] == "ncu-roof: next: ncu-roof timeline mw.trace.json --report mw.ncu-rep"
    events = json.loads((tmp_path / "mw.trace.json").read_text())["traceEvents"]
    mm = [e for e in events if e.get("name") in ("aten::mm", "aten::matmul")]
    assert mm and any(e.get("args", {}).get("Input Dims") == [[64, 32], [32, 16]] for e in mm)  # record_shapes
    assert any(e.get("cat") == "python_function" and "model.py" in e.get("name", "") for e in events)  # with_stack


def test_the_trace_runner_alone(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    usage = subprocess.run([sys.executable, "-m", "ncu_roof.torch_trace", "out.json"], capture_output=True,
                           text=True, env=env, cwd=tmp_path)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: python -m ncu_roof.torch_trace OUT.json")
    pytest.importorskip("torch")
    (tmp_path / "fails.py").write_text("import sys\nsys.exit(4)\n")
    failed = subprocess.run([sys.executable, "-m", "ncu_roof.torch_trace", "t.json", "fails.py"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=300)
    assert failed.returncode == 4 and (tmp_path / "t.json").is_file()  # the trace kept, the code too
