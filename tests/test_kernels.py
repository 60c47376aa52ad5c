"""kernels/ without a GPU: NumPy references, NVRTC compiles, the seeds' counts, arguments, gpu_check.

The CUDA sources are compiled to PTX with NVRTC (PyPI: cuda-bindings, nvidia-cuda-nvrtc); sources
that include CUDA headers (cuda_fp16.h, mma.h) also need them (PyPI: nvidia-cuda-runtime,
nvidia-cuda-crt, or a CUDA toolkit) and are skipped with that reason otherwise.
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kernels  # noqa: E402
from kernels import _common as C  # noqa: E402

MODULES = {name: importlib.import_module(f"kernels.{name}") for name in kernels.SCRIPTS}
ARCHES = ("compute_80", "compute_90")
rng = np.random.default_rng(0)


def m(name: str):  # noqa: ANN201
    return MODULES[name]


# --- NVRTC ------------------------------------------------------------------------------------


def _nvrtc():  # noqa: ANN202
    try:
        from cuda.bindings import nvrtc  # type: ignore[import-not-found]
    except ImportError:
        try:
            from cuda import nvrtc  # type: ignore[import-not-found,no-redef]
        except ImportError:
            pytest.skip("NVRTC not importable: pip install cuda-bindings nvidia-cuda-nvrtc")
    try:
        nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - the library itself is missing
        pytest.skip(f"NVRTC library not loadable ({exc}): pip install nvidia-cuda-nvrtc")
    return nvrtc


@cache
def compile_ptx(code: str, name: str, arch: str) -> str:
    """CUDA C++ -> PTX with NVRTC; raises AssertionError with the log on failure."""
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(code.encode(), f"{name}.cu".encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in C.nvrtc_options())]
    try:
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.decode().rstrip("\x00")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _all_sources() -> list[C.Source]:
    seen: dict[str, C.Source] = {}
    for mod in MODULES.values():
        for s in mod.SOURCES:
            seen.setdefault(s.name, s)
    return list(seen.values())


SOURCES = _all_sources()


def test_every_script_with_kernels_registers_sources() -> None:
    without = {n for n, mod in MODULES.items() if not mod.SOURCES}
    assert without == {"decode_linear"}  # cuBLAS through cupy.matmul
    names = {k for s in SOURCES for k in s.kernels}
    assert {"vecadd", "saxpy", "relu_fp16", "softmax_rows", "layernorm_rows", "gemv_fp16",
            "gemm_naive_fp32", "gemm_tiled_fp16", "gemm_tiled_fp32_gelu", "mma_peak_f32acc",
            "mma_peak_f16acc", "empty_kernel", "decode_attention", "busy_block",
            "row_mean", "affine"} <= names


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_source_compiles_with_nvrtc(src: C.Source, arch: str) -> None:
    if src.headers and not C.cuda_include_dirs():
        pytest.skip(f"{src.name} includes {', '.join(src.headers)}: no CUDA headers found "
                    "(pip install nvidia-cuda-runtime nvidia-cuda-crt, or set CUDA_PATH)")
    ptx = compile_ptx(src.code, src.name, arch)
    assert f".target sm_{arch.split('_')[1]}" in ptx
    for k in src.kernels:
        assert f".entry {k}(" in ptx, k


def test_tensor_peak_uses_wmma_with_both_accumulators() -> None:
    src = m("tensor_peak").SOURCE
    assert src.min_arch >= 70
    if not C.cuda_include_dirs():
        pytest.skip("mma.h not found (pip install nvidia-cuda-runtime nvidia-cuda-crt)")
    ptx = compile_ptx(src.code, src.name, "compute_80")
    assert "wmma.mma.sync" in ptx
    assert ".f32.f32" in ptx and ".f16.f16" in ptx  # FP32 and FP16 accumulate variants


# --- the dial ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chains", [4, 1])
def test_dial_source_is_straight_line_with_exactly_f_fmas(chains: int) -> None:
    dial = m("dial")
    for f in (1, 2, 3, 4, 5, 64, 2048):
        code = dial.source(f, chains).code
        assert code.count("fmaf(") == f
        assert "for" not in code and "while" not in code and "#pragma" not in code


def test_dial_ptx_has_2048_fmas() -> None:
    dial = m("dial")
    for chains in (4, 1):
        src = dial.source(2048, chains)
        ptx = compile_ptx(src.code, src.name, "compute_80")
        assert ptx.count("fma.rn.f32") == 2048, chains


def test_dial_four_chains_are_independent() -> None:
    code = m("dial").source(16, 4).code
    assert all(f"a{k} = fmaf(a{k}, b, c{k});" in code for k in range(4))


# --- counts: the seeds' table -----------------------------------------------------------------


def intensity(c: tuple[float, float]) -> float:
    return c[0] / c[1]


def test_counts_streaming_rows_of_the_table() -> None:
    n = 1 << 20
    assert m("vecadd").counts(n) == (n, 12 * n)
    assert round(intensity(m("vecadd").counts(n)), 3) == 0.083
    assert m("saxpy").counts(n) == (2 * n, 12 * n)
    assert round(intensity(m("saxpy").counts(n)), 2) == 0.17
    assert m("relu_fp16").counts(n) == (n, 4 * n)
    assert intensity(m("relu_fp16").counts(n)) == 0.25
    assert m("softmax").counts(1024, 1024) == (5 * n, 8 * n)
    assert round(intensity(m("softmax").counts(1024, 1024)), 1) == 0.6
    assert m("size_sweep").counts(n) == m("saxpy").counts(n)


def test_counts_layernorm_fused_and_unfused() -> None:
    rows, cols = 16384, 4096
    n = rows * cols
    flops, nbytes = m("layernorm").counts(rows, cols)
    assert flops == 8 * n == 536870912  # the region docstring's example
    assert nbytes == 8 * n + 8 * cols  # x and out once, plus gamma and beta
    assert intensity((flops, nbytes)) == pytest.approx(1.0, rel=1e-3)
    lu = m("layernorm_unfused")
    assert lu.counts(rows, cols) == (flops, nbytes)  # algorithmic counts do not depend on fusion
    assert lu.achieved_bytes(rows, cols) == 10 * 4 * n
    assert round(lu.achieved_bytes(rows, cols) / 1e9, 1) == 2.7
    assert round(lu.algorithmic_bytes(rows, cols) / 1e9, 2) == 0.54
    assert lu.achieved_bytes(rows, cols) / lu.algorithmic_bytes(rows, cols) == 5
    assert len(lu.OPS) == 6


def test_counts_gemv_and_gemm() -> None:
    mm, k = 8192, 8192
    flops, nbytes = m("gemv_fp16").counts(mm, k)
    assert flops == 2 * mm * k
    assert nbytes == pytest.approx(2 * mm * k, rel=1e-3)
    assert intensity((flops, nbytes)) == pytest.approx(1.0, rel=1e-3)
    g = m("gemm")
    for n in (256, 1024, 4096):
        assert g.counts(n, "fp32") == (2 * n**3, 12 * n**2)
        assert g.counts(n, "fp16") == (2 * n**3, 6 * n**2)
        assert intensity(g.counts(n, "fp32")) == pytest.approx(n / 6)
        assert intensity(g.counts(n, "fp16")) == pytest.approx(n / 3)
    assert round(intensity(g.counts(4096, "fp32"))) == 683  # the seeds' 4096/6


def test_counts_gelu_epilogue() -> None:
    ge = m("gelu_epilogue")
    assert ge.counts(4096) == (2 * 4096**3 + 10 * 4096**2, 12 * 4096**2)
    assert ge.extra_bytes_unfused(4096) == 128 * 2**20  # "saves 128 MB of DRAM traffic"


def test_counts_dial_tensor_and_waves() -> None:
    dial = m("dial")
    for f in dial.F_VALUES:
        assert intensity(dial.counts(1 << 20, f)) == f / 4
    assert dial.F_VALUES[0] == 1 and dial.F_VALUES[-1] == 2048
    tp = m("tensor_peak")
    flops, nbytes = tp.counts(10, 100, "f32acc")
    assert flops == 10 * tp.WARPS_PER_BLOCK * tp.ACC * 201 * 8192
    assert nbytes == 3 * 512 + 40 * 256 * 4
    assert tp.counts(10, 100, "f16acc")[1] == 3 * 512 + 40 * 256 * 2
    wq = m("wave_quant")
    assert wq.counts(2, 256, 10) == (512 * 86, 2048)
    g = wq.grids(1056)
    assert {264, 1056, 1057, 2112, 2113} <= set(g)
    assert wq.predicted_waves(1057, 1056) == 2 and wq.predicted_waves(1056, 1056) == 1
    assert m("launch_overhead").counts() == (0, 0)


def test_counts_decode_dials() -> None:
    dl = m("decode_linear")
    ai = [intensity(dl.counts(b, 8192, 8192)) for b in dl.BATCHES]
    assert ai == sorted(ai)
    for b, a in zip(dl.BATCHES, ai, strict=True):
        assert 0.9 * b <= a <= b  # intensity ~ batch while B << K, N
    da = m("decode_attention")
    for b in da.BATCHES:
        assert intensity(da.counts(b, 8, 4096)) == pytest.approx(1.0, abs=0.02)


# --- NumPy references -------------------------------------------------------------------------


def test_reference_elementwise() -> None:
    a, b = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    np.testing.assert_allclose(m("vecadd").reference(a, b), [x + y for x, y in zip(a, b, strict=True)])
    np.testing.assert_allclose(m("saxpy").reference(2.5, a, b),
                               [2.5 * float(x) + float(y) for x, y in zip(a, b, strict=True)], rtol=1e-6, atol=1e-6)
    h = rng.standard_normal(100).astype(np.float16)
    r = m("relu_fp16").reference(h)
    assert r.dtype == np.float16 and np.array_equal(r, np.where(h > 0, h, 0).astype(np.float16))
    y = m("size_sweep").reference(0.5, a, b, 3)
    np.testing.assert_allclose(y, b + 1.5 * a.astype(np.float64), rtol=1e-12)


def test_reference_softmax() -> None:
    x = rng.standard_normal((5, 37))
    p = m("softmax").reference(x)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    for row, prow in zip(x, p, strict=True):
        lse = math.log(sum(math.exp(v) for v in row))
        np.testing.assert_allclose(np.log(prow), row - lse, rtol=1e-10, atol=1e-12)


def test_reference_layernorm_and_six_ops() -> None:
    x = rng.standard_normal((4, 64)) * 3 + 1
    g, b = rng.standard_normal(64), rng.standard_normal(64)
    out = m("layernorm").reference(x, g, b)
    want = (x - x.mean(1)[:, None]) / np.sqrt(x.var(1)[:, None] + 1e-5) * g + b
    np.testing.assert_allclose(out, want, rtol=1e-10)
    np.testing.assert_allclose(m("layernorm_unfused").six_ops(x, g, b), out, rtol=1e-10)


def test_reference_gemv_gemm_gelu() -> None:
    a = rng.standard_normal((8, 16)).astype(np.float16)
    x = rng.standard_normal(16).astype(np.float16)
    want = [sum(float(a[i, j]) * float(x[j]) for j in range(16)) for i in range(8)]
    np.testing.assert_allclose(m("gemv_fp16").reference(a, x).astype(np.float64), want, rtol=2e-3,
                               atol=2e-3)
    A, B = rng.standard_normal((6, 6)).astype(np.float32), rng.standard_normal((6, 6)).astype(np.float32)
    np.testing.assert_allclose(m("gemm").reference(A, B), np.einsum("ik,kj->ij", A.astype(float), B),
                               rtol=1e-6, atol=1e-6)
    c = A.astype(np.float64) @ B
    exact = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(c)
    np.testing.assert_allclose(m("gelu_epilogue").reference(A, B), exact, atol=2e-3)


def test_reference_dial() -> None:
    dial = m("dial")
    x = rng.standard_normal(10).astype(np.float32)
    v = x.astype(np.float64)
    b, c = dial.B, dial.CS
    np.testing.assert_allclose(dial.reference(x, 1), v * b + c[0])
    np.testing.assert_allclose(dial.reference(x, 3, 1), ((v * b + c[0]) * b + c[0]) * b + c[0])
    # F=5, 4 chains: 5 - 3 merges = 2 chain FMAs (a0 and a1 once each), then three merges
    a0, a1 = v * b + c[0], v * b + c[1]
    np.testing.assert_allclose(dial.reference(x, 5, 4), ((a0 * b + a1) * b + v) * b + v)
    for f in (1, 2, 5, 2048):
        for chains in (1, 4):
            used, order = dial._schedule(f, chains)
            assert len(order) + used - 1 == f


def test_reference_tensor_peak() -> None:
    tp = m("tensor_peak")
    a, b = tp.operands(3)
    assert set(np.unique(a)) <= {-1, 0, 1} and a.dtype == np.float16
    out = tp.reference(a, b, 3)
    assert out.shape == (3, 16, 16)
    want = [[tp.ACC * sum(float(a[i, k]) * float(b[k, j]) for k in range(16)) for j in range(16)]
            for i in range(16)]
    np.testing.assert_array_equal(out[2], want)
    assert np.abs(out).max() <= 2048  # exact in FP16 accumulators


def test_reference_decode() -> None:
    x = rng.standard_normal((3, 32)).astype(np.float16)
    w = rng.standard_normal((32, 8)).astype(np.float16)
    np.testing.assert_allclose(m("decode_linear").reference(x, w).astype(float),
                               x.astype(float) @ w.astype(float), rtol=3e-3, atol=3e-3)
    q, k, v = rng.standard_normal((2, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    out = m("decode_attention").reference(q, k, v)
    for h in range(2):
        s = np.array([q[h] @ k[h, j] for j in range(5)]) / math.sqrt(8)
        p = np.exp(s) / np.exp(s).sum()
        np.testing.assert_allclose(out[h], sum(p[j] * v[h, j] for j in range(5)), rtol=1e-10)


def test_reference_wave_quant() -> None:
    wq = m("wave_quant")
    n = 50
    got = wq.reference(32, n)
    t = np.arange(32) * 1e-3
    fixed = wq.CS / (1 - wq.B)  # a_n = B^n (a_0 - fixed) + fixed
    want = sum(wq.B**n * (t + k - fixed) + fixed for k in range(4))
    np.testing.assert_allclose(got, want, rtol=1e-10)


# --- arguments without CuPy -------------------------------------------------------------------


@pytest.mark.parametrize("name", kernels.SCRIPTS)
def test_main_help_and_defaults(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    mod = m(name)
    with pytest.raises(SystemExit) as exc:
        mod.main(["--help"])
    assert exc.value.code == 0
    assert "--repeat" in capsys.readouterr().out
    args = mod.build_parser().parse_args([])
    assert args.repeat >= 1 and args.warmup >= 0 and not args.no_check
    with pytest.raises(SystemExit):
        mod.build_parser().parse_args(["--no-such-option"])


def test_sizes_are_arguments() -> None:
    assert m("vecadd").build_parser().parse_args(["--n", "1024"]).n == 1024
    args = m("gemm").build_parser().parse_args(["--n", "128", "--dtype", "fp16", "--impl", "tiled"])
    assert (args.n, args.dtype, args.impl) == (128, ["fp16"], ["tiled"])
    assert m("dial").build_parser().parse_args(["--f", "1", "8", "--chains", "1"]).f == [1, 8]
    assert m("decode_linear").build_parser().parse_args([]).batch == list(m("decode_linear").BATCHES)
    assert m("layernorm_unfused").build_parser().parse_args(["--rows", "2"]).rows == 2


def test_scripts_run_as_files_for_help() -> None:
    for name in kernels.SCRIPTS:
        proc = subprocess.run([sys.executable, str(ROOT / "kernels" / f"{name}.py"), "--help"],
                              capture_output=True, text=True, timeout=60, cwd="/")
        assert proc.returncode == 0, (name, proc.stderr)
        assert "usage:" in proc.stdout


def test_main_without_cupy_says_so() -> None:
    try:
        import cupy  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(SystemExit, match="CuPy"):
            m("vecadd").main(["--n", "16"])
    else:
        pytest.skip("CuPy is installed here")


# --- capture/gpu_check.py ---------------------------------------------------------------------


def _gpu_check():  # noqa: ANN202
    sys.path.insert(0, str(ROOT / "capture"))
    try:
        return importlib.import_module("gpu_check")
    finally:
        sys.path.remove(str(ROOT / "capture"))


def test_gpu_check_dry_run_prints_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    gc = _gpu_check()
    assert gc.main(["--dry-run", "--gpu", "testgpu"]) == 0
    out = capsys.readouterr().out
    for name in kernels.SCRIPTS:
        assert (f"capture kernels/{name}.py -o fixtures/captured/testgpu/{name}.ncu-rep "
                "--force --no-diagnose --") in out
    assert "ceilings -o fixtures/captured/testgpu/ceilings.toml" in out
    assert "kernels/launch_overhead.py --launches 10000" in out
    assert not (ROOT / "fixtures" / "captured" / "testgpu").exists()
    # every capture's arguments parse with its script's own parser
    for script, extra in gc.CAPTURES:
        m(script).build_parser().parse_args([*extra, *gc.ONCE])
    for script, extra in gc.PLAIN:
        m(script).build_parser().parse_args([*extra, "--json", "x.json"])


def test_gpu_check_shell_and_python_parse() -> None:
    assert subprocess.run(["bash", "-n", str(ROOT / "capture" / "gpu-check.sh")]).returncode == 0
    import py_compile

    py_compile.compile(str(ROOT / "capture" / "gpu_check.py"), doraise=True)
    assert _gpu_check().slug("NVIDIA H200") == "h200"
    assert _gpu_check().slug("NVIDIA GeForce RTX 4090") == "geforce-rtx-4090"


def _frame(rows: list[tuple[str, float, float, float]]):  # noqa: ANN202
    """A tidy-table stand-in: (nvtx message, time_s, dram_bytes, flops_fp32) per launch."""
    import pandas as pd

    return pd.DataFrame({"nvtx": [r[0] for r in rows], "time_s": [r[1] for r in rows],
                         "dram_bytes": [r[2] for r in rows], "flops_fp32": [r[3] for r in rows],
                         "kernel": "k"})


def test_gpu_check_analysis_on_synthetic_launches() -> None:
    from ncu_roof.region import range_message

    gc = _gpu_check()
    n = 1 << 26
    vf, vb = m("vecadd").counts(n)
    lf, lb = m("layernorm").counts(16384, 4096)
    rows = [(f"outer/{range_message('vecadd', vf, vb)}", 1e-4, vb * 1.05, vf),
            (range_message("layernorm", lf, lb), 1e-4, lb * 1.02, 0.0)]
    rows += [(range_message("layernorm_unfused", lf, lb), 1e-4, lb * 5 / 6, 0.0)] * 6
    rows += [("unrelated", 1.0, 1.0, 1.0)]
    for f in m("dial").F_VALUES:
        df, db = m("dial").counts(n, f)
        t = max(db / 4e12, df / 60e12)
        rows.append((range_message(f"dial_c4_f{f:04d}", df, db), t, db, df))
    wave = 1056
    for g in m("wave_quant").grids(wave):
        wf, wb = m("wave_quant").counts(g, 256, 2048)
        rows.append((range_message(f"wave_g{g:05d}", wf, wb), 1e-4 * math.ceil(g / wave), wb, wf))
    for b in (1, 2, 4, 8):
        df, db = m("decode_linear").counts(b, 8192, 8192)
        rows.append((range_message(f"decode_linear_b{b:04d}", df, db), 1e-4, db, 0.0))
        af, ab = m("decode_attention").counts(b, 8, 4096)
        rows.append((range_message(f"decode_attention_b{b:03d}", af, ab), 1e-4, ab * 1.1, 0.0))
    r = gc.region_table(_frame(rows))
    assert r.loc["layernorm_unfused", "launches"] == 6 and "unrelated" not in r.index
    checks = {c.name: c for c in [*gc.check_streaming(r), *gc.check_layernorm(r),
                                  *gc.check_dial(r, {}), *gc.check_waves(r), *gc.check_decode(r)]}
    assert checks["vecadd: achieved vs algorithmic intensity"].ok is True
    assert checks["saxpy: achieved intensity"].ok is False  # absent from the frame
    assert checks["layernorm_unfused: DRAM bytes / algorithmic"].ok is True
    assert checks["layernorm (fused): DRAM bytes / algorithmic"].ok is True
    assert checks["dial: GB/s flat for F <= 8"].ok is True
    assert checks["dial: GFLOP/s flat at F = 1024, 2048"].ok is True
    assert "F ~ 60" in checks["dial: ridge (FLOP/B) and F at the ridge"].measured  # 60 TF / 4 TB/s
    assert checks["dial F=2048: measured FP32 FLOPs = algorithmic"].ok is True
    assert checks[f"wave quantization: time(wave+1 block) / time(wave), wave={wave}"].ok is True
    assert checks["decode_linear: intensity rising with batch"].ok is True
    assert checks["decode_attention: intensity ~1 at every batch"].ok is True
    assert "| check | predicted | measured |" in gc.table(list(checks.values()))


def test_gpu_check_region_parsing() -> None:
    from ncu_roof.region import range_message

    gc = _gpu_check()
    msg = range_message("gemm_fp32_naive", 2e9, 1.2e7)
    assert gc.region_of(msg) == ("gemm_fp32_naive", 2e9, 1.2e7)
    assert gc.region_of(f"a/b/{msg} | dom@x") == ("gemm_fp32_naive", 2e9, 1.2e7)
    assert gc.region_of("plain/range") is None and gc.region_of(float("nan")) is None


def test_wave_quant_blocks_are_clock_paced() -> None:
    """A block must take the same time alone as with a full SM, or the tail wave hides."""
    wq = m("wave_quant")
    assert "clock64()" in wq.SOURCE.code and "int period" in wq.SOURCE.code
    assert wq.build_parser().parse_args([]).period == wq.PERIOD >= 256
    ptx = compile_ptx(wq.SOURCE.code, wq.SOURCE.name, "compute_90")
    assert "%clock64" in ptx


def test_gpu_check_captures_leave_clocks_and_size_gelu_past_l2() -> None:
    gc = _gpu_check()
    args = gc.build_parser().parse_args(["--gpu", "t"])
    for step in gc.make_plan(args, "t").steps:
        if step.kind == "capture":
            i = step.argv.index("--")
            assert "--clock-control" in step.argv[:i] and "none" in step.argv[:i]
    n = int(dict(gc.CAPTURES)["gelu_epilogue"][1])
    assert 4 * n * n > 60e6  # C must not fit in the H200's L2, or its round trip never reaches DRAM
    assert args.budget_s + 120 <= 600  # leaves the analysis time inside one 10-minute device call


def test_gpu_check_run_plan_survives_a_hung_step(tmp_path: Path) -> None:
    gc = _gpu_check()
    plan = gc.Plan(tmp_path / "out")
    plan.dir.mkdir()
    stale = plan.dir / "b.json"
    stale.write_text("old")
    hang = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)")
    plan.steps = [gc.Step("a hang", [sys.executable, "-c", hang], "plain"),
                  gc.Step("b", [sys.executable, "-c", "print('hello')"], "plain", stale)]
    seen: list[str] = []
    t0 = __import__("time").monotonic()
    gc.run_plan(plan, budget_s=60, step_limit_s=2, after_step=lambda: seen.append(plan.steps[0].status))
    assert __import__("time").monotonic() - t0 < 30
    assert plan.steps[0].status.startswith("timed out") and plan.steps[1].status == "ok"
    assert not stale.exists()  # a step's old output is removed before it runs
    assert len(seen) == 2 and (plan.dir / "logs" / "b.log").read_text().strip() == "hello"
    gc.write_manifest(plan, "GPU", "1.0", "ncu 1")
    assert "| a hang | timed out" in (plan.dir / "MANIFEST.md").read_text()


def test_gpu_check_analysis_keeps_going_past_a_broken_report(tmp_path: Path) -> None:
    gc = _gpu_check()
    plan = gc.Plan(tmp_path)
    bad = tmp_path / "vecadd.ncu-rep"
    bad.write_bytes(b"not a report")
    plan.steps = [gc.Step("vecadd", [], "capture", bad, status="ok")]
    checks = gc.analyse(plan)
    assert any(c.name == "load vecadd.ncu-rep" and c.ok is False for c in checks)
