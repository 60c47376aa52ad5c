"""NVTX regions: ncu_roof.region counts carried through a real .ncu-rep, and matching on real NVTX."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.model.algorithmic import RegionSpec, region_mask
from ncu_roof.read.table import load_table
from ncu_roof.region import parse_range_message, range_message, region

ncu_report = pytest.importorskip("ncu_report")

N = 16384 * 4096  # elements of the seeds' layernorm activation
PASS = 4 * N  # one FP32 pass: 268,435,456 bytes
ALG_FLOPS, ALG_BYTES = 8 * N, 2 * PASS
# the template's gpc clock: the elapsed cycles written with each duration keep the two consistent
# (validation holds a duration to cycles / clock)
TEMPLATE_GPC_HZ = 1_417_594_884.4884489


def test_range_message_round_trip() -> None:
    message = range_message("layernorm", flops=ALG_FLOPS, bytes=ALG_BYTES)
    assert message == "layernorm [ncu-roof flops=536870912 bytes=536870912]"
    counts = parse_range_message(message)
    assert (counts.name, counts.flops, counts.bytes) == ("layernorm", ALG_FLOPS, ALG_BYTES)
    assert parse_range_message("plain").flops is None


def test_region_works_without_a_gpu_or_profiler() -> None:
    calls = []

    @region("step", flops=10, bytes=20)
    def step(x: int) -> int:
        calls.append(x)
        return x + 1

    assert step(1) == 2 and calls == [1]
    with region("outer", bytes=5) as counts:
        assert counts.bytes == 5.0 and counts.flops is None
    with pytest.raises(ValueError):
        region("bad", flops=-1)


@pytest.fixture(scope="module")
def layernorm_report(tmp_path_factory: pytest.TempPathFactory, realdata: Path) -> Path:
    reportgen = pytest.importorskip("reportgen", reason="tests/reportgen.py needs grpcio-tools and protobuf")
    try:
        pb = reportgen.proto_modules()
    except Exception as exc:  # noqa: BLE001 - no ncu schemas here: say why and skip
        pytest.skip(f"cannot build the .ncu-rep protobuf modules: {exc}")
    template = realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep"
    tag = range_message("layernorm", flops=ALG_FLOPS, bytes=ALG_BYTES)
    passes = [("ln_mean", 1, 0), ("ln_sub", 1, 1), ("ln_square", 1, 1), ("ln_var", 1, 0),
              ("ln_normalize", 1, 1), ("ln_affine", 1, 1)]
    launches = [
        reportgen.LaunchSpec(kernel=name, nvtx=["model", tag], metrics={
            "gpu__time_duration.sum": float((reads + writes) * 454_975),
            "gpc__cycles_elapsed.max": float((reads + writes) * 454_975e-9 * TEMPLATE_GPC_HZ),
            "dram__bytes_read.sum": float(reads * PASS), "dram__bytes_write.sum": float(writes * PASS),
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": float(N),
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 0.0,
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0})
        for name, reads, writes in passes
    ]
    launches.append(reportgen.LaunchSpec(kernel="gelu", nvtx=["model", "gelu"], metrics={
        "gpu__time_duration.sum": 100_000.0, "gpc__cycles_elapsed.max": 100_000e-9 * TEMPLATE_GPC_HZ,
        "dram__bytes_read.sum": float(PASS),
        "dram__bytes_write.sum": float(PASS)}))
    path = tmp_path_factory.mktemp("nvtx") / "synthetic_layernorm_nvtx.ncu-rep"
    reportgen.write_report(path, launches, template, pb=pb)
    return path


def test_written_report_reads_back_with_ncu_report(layernorm_report: Path) -> None:
    rng = ncu_report.load_report(str(layernorm_report)).range_by_idx(0)
    assert rng.num_actions() == 7
    assert len(rng.actions_by_nvtx(["model/"], [])) == 7


def test_nvtx_region_counts_give_the_seeds_layernorm(layernorm_report: Path) -> None:
    d = diagnose_paths(layernorm_report)
    assert d.placed["nvtx"].iloc[0] == "model/layernorm [ncu-roof flops=536870912 bytes=536870912]"
    regions = d.regions.set_index("name")
    assert list(regions.index) == ["layernorm"]  # "gelu" carries no counts: no region
    ln = regions.loc["layernorm"]
    assert ln["launches"] == 6 and ln["occurrences"] == 1
    assert sorted(ln["kernels"]) == sorted(["ln_mean", "ln_sub", "ln_square", "ln_var", "ln_normalize", "ln_affine"])
    assert ln["dram_bytes"] == 10 * PASS
    assert ln["extra_bytes_factor"] == pytest.approx(5.0)
    assert ln["alg_intensity"] == pytest.approx(1.0)
    assert ln["time_s"] == pytest.approx(10 * 454_975e-9)
    # the template is an RTX 3070 basic-set report with no DRAM peak: the device table's 448 GB/s x 88%
    assert ln["dram_roof_bytes_per_s"] == pytest.approx(0.88 * 448e9)
    assert ln["ideal_time_s"] == pytest.approx(ALG_BYTES / (0.88 * 448e9))
    assert ln["time_at_stake_s"] == pytest.approx(10 * 454_975e-9 - ALG_BYTES / (0.88 * 448e9))


def test_sidecar_nvtx_key_matches_the_range_name_without_its_counts(layernorm_report: Path) -> None:
    table = load_table(layernorm_report)
    assert region_mask(table, RegionSpec("ln", None, None, nvtx="layernorm")).sum() == 6
    assert region_mask(table, RegionSpec("all", None, None, nvtx="model")).sum() == 7
    assert region_mask(table, RegionSpec("g", None, None, nvtx="gelu", kernels="^gelu$")).sum() == 1


def test_matching_on_a_real_nvtx_report_agrees_with_ncu_report(realdata: Path) -> None:
    path = realdata / "NVIDIA__nsight-training" / "manual_nvtx.ncu-rep"
    table = load_table(path)
    rng = ncu_report.load_report(str(path)).range_by_idx(0)
    for name in ("run_test", "daxpy", "init_data"):
        ours = set(table.loc[region_mask(table, RegionSpec(name, None, None, nvtx=name)), "kernel"])
        expected = set()
        for stack in ([f"{name}/"], [f"run_test/{name}/"]):
            try:
                expected |= {rng.action_by_idx(i).name() for i in rng.actions_by_nvtx(stack, [])}
            except Exception:  # noqa: BLE001 - a stack ncu_report does not accept
                continue
        assert ours == expected, name


class _Domain:
    def __init__(self, name: str, stack: list[str], ranges: list[str]) -> None:
        self._name, self._stack, self._ranges = name, stack, ranges

    def name(self) -> str:
        return self._name

    def push_pop_ranges(self) -> list[str]:
        return self._stack

    def start_end_ranges(self) -> list[str]:
        return self._ranges


class _State:
    def __init__(self, domains: list[_Domain]) -> None:
        self._domains = domains

    def domains(self) -> list[int]:
        return list(range(len(self._domains)))

    def domain_by_id(self, i: int) -> _Domain:
        return self._domains[i]


class _Action:
    def __init__(self, state: _State) -> None:
        self._state = state

    def nvtx_state(self) -> _State:
        return self._state


def test_start_end_ranges_count_like_push_pop_levels() -> None:
    """nvtxRangeStart/End ranges do not nest: each is its own entry, and regions match them."""
    import pandas as pd

    from ncu_roof.read.ncu_rep import _nvtx_path

    action = _Action(_State([_Domain("<default domain>", ["model", "block"], ["step [ncu-roof flops=10 bytes=20]"]),
                             _Domain("lib", [], ["io"])]))
    path = _nvtx_path(action)
    assert path == "model/block | step [ncu-roof flops=10 bytes=20] | lib@io"
    table = pd.DataFrame({"kernel": ["k"], "kernel_demangled": ["k"], "nvtx": [path], "report": ["r"], "id": [0]})
    assert region_mask(table, RegionSpec("s", None, None, nvtx="step")).tolist() == [True]
    assert region_mask(table, RegionSpec("io", None, None, nvtx="io")).tolist() == [True]


# --- the NVTX and profiler backends -------------------------------------------------------------------
def _fake_torch(calls: list[str]) -> object:
    from types import SimpleNamespace

    nvtx = SimpleNamespace(range_push=lambda m: calls.append(f"push {m}"), range_pop=lambda: calls.append("pop"))
    profiler = SimpleNamespace(start=lambda: calls.append("start"), stop=lambda: calls.append("stop"))
    return SimpleNamespace(cuda=SimpleNamespace(nvtx=nvtx, profiler=profiler))


def test_torch_carries_regions_and_the_profile_gate_without_nvtx_or_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import sys

    reg = sys.modules["ncu_roof.region"]  # (the package exports the class under the module's name)

    real_import = builtins.__import__

    def no_nvtx_or_cupy(name: str, *args: object, **kwargs: object) -> object:
        if name in ("nvtx", "cupy.cuda", "cupy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    calls: list[str] = []
    monkeypatch.setattr(builtins, "__import__", no_nvtx_or_cupy)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(calls))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(reg, "_FOUND", [])
    with reg.region("attention", flops=10, bytes=20), reg.profile():
        pass
    assert calls == ["push attention [ncu-roof flops=10 bytes=20]", "start", "stop", "pop"]
    # a CPU build of PyTorch has torch.cuda.nvtx but raises on use: it is not a backend
    from types import SimpleNamespace

    cpu_torch = _fake_torch(calls)
    cpu_torch.backends = SimpleNamespace(cuda=SimpleNamespace(is_built=lambda: False))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", cpu_torch)
    monkeypatch.setattr(reg, "_FOUND", [])
    calls.clear()
    with reg.region("attention"):
        pass
    assert calls == []


def test_no_backend_under_ncu_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import sys

    reg = sys.modules["ncu_roof.region"]  # (the package exports the class under the module's name)

    real_import = builtins.__import__

    def none(name: str, *args: object, **kwargs: object) -> object:
        if name in ("nvtx", "cupy.cuda", "cupy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", none)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(reg, "_FOUND", [])
    monkeypatch.setattr(reg, "_WARNED", [])
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nvidia/nsight-compute/2024.1.1/target/libInjection.so")
    with pytest.warns(RuntimeWarning, match="no NVTX backend"):
        with reg.region("x"):
            pass
    with reg.region("y"):  # once: the second region stays quiet
        pass
