"""The CPU side of the H200 register diagnostic (``benchmarks/h200/diag_matmul_regs.py``)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "h200" / "diag_matmul_regs.py"


@pytest.fixture(scope="module")
def diag():
    spec = importlib.util.spec_from_file_location("diag_matmul_regs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_parse_shapes(diag):
    assert diag.parse_shapes("352x11000x6992:float16,2000X3000x16384:bfloat16,8x16x32") == [
        (352, 11000, 6992, "float16"), (2000, 3000, 16384, "bfloat16"), (8, 16, 32, "float16")]
    with pytest.raises(ValueError, match="MxNxK with positive integers, got '12x3:float16'"):
        diag.parse_shapes("12x3:float16")
    with pytest.raises(ValueError, match="float16 or bfloat16, got 'float32'"):
        diag.parse_shapes("12x3x4:float32")
    assert len(diag.parse_shapes(diag.SHAPES)) == 6


def test_ptx_counts(diag):
    ptx = "\n".join([
        "\tmov.u16 %rs1, 0x0;",
        "\t@%p1 ld.global.b16 { %rs1 }, [ %rd1 + 0 ];",
        "\t@!%p2 ld.global.L1::evict_last.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd2 + 0 ];",
        "\tcp.async.cg.shared.global [ %r5 + 0 ], [ %rd3 + 0 ], 0x10, %r6;",
        "\tcp.async.commit_group;",
        "\tst.shared.b16 [%r7], %rs1;",
        "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r8, %r9, %r10, %r11}, [%r12];",
        "\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {...};",
        "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};",
    ])
    assert diag.ptx_counts(ptx) == {
        "ptx_ld_global": 2, "ptx_ld_global_vec": 1, "ptx_cp_async": 1, "ptx_ldmatrix": 1,
        "ptx_st_shared": 1, "ptx_mma_sync": 1, "ptx_wgmma": 1}


def test_l1_left_kb(diag):
    # 128x64x64 s4 with B scalar: 3 programs of 72 KB (+1 KB) take the 228 KB carveout
    assert diag.l1_left_kb(3, 73728) == 28
    # the same at s2 (40 KB): 123 KB -> the 132 KB carveout
    assert diag.l1_left_kb(3, 40960) == 124
    assert diag.l1_left_kb(1, 0) == 248  # 1 KB reserve -> the 8 KB carveout
    assert diag.l1_left_kb(4, 64 * 1024) == 0  # 260 KB: no carveout holds it


def test_configs(diag):
    cfgs = diag.all_configs()
    assert len(cfgs) == 21
    assert [s for _, s in cfgs].count("stage_sweep") == 5
    # the sweep keeps tiles and warps of tutorial configs, with fewer stages
    tut = {c[:4] + c[5:]: c[4] for c, s in cfgs if s == "tutorial"}
    for c, s in cfgs:
        if s == "stage_sweep":
            assert c[4] < tut[c[:4] + c[5:]]


def test_committed_predictions(diag):
    path = ROOT / "benchmarks" / "h200" / "data" / "diag_matmul_regs_predictions.csv"
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 * 21
    picks = {r["shape"]: r["config"] for r in rows if r["model_pick"] == "1"}
    assert picks["352x11000x6992:float16"] == "128x64x32 G8 w4 s4"  # the v6 miss
    assert picks["288x9000x8192:float16"] == "128x64x32 G8 w4 s4"  # the v5 miss
    cand = {r["shape"]: r["config"] for r in rows if r["cand_l1_rank"] == "1"}
    assert cand["352x11000x6992:float16"] == "128x128x32 G8 w4 s4"


def test_device_part_needs_torch(diag, tmp_path, monkeypatch):
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: the device part would start")
    monkeypatch.setattr(sys, "argv", ["diag"])
    with pytest.raises(SystemExit, match="needs torch and triton on a CUDA machine"):
        diag.main(["--out", str(tmp_path)])
    with pytest.raises(SystemExit):  # argparse: no --out and no $OUT
        monkeypatch.delenv("OUT", raising=False)
        diag.main([])


class _T:
    """A host array standing in for a CUDA tensor (shape capped at 32 a dimension)."""

    def __init__(self, a):
        self.a, self.shape = a, a.shape

    def float(self):
        return _T(self.a.astype("float32"))

    def __matmul__(self, o):
        return _T(self.a @ o.a)

    def __sub__(self, o):
        return _T(self.a - o.a)

    def norm(self):
        import numpy as np

        return float(np.linalg.norm(self.a))

    def zero_(self):
        self.a[...] = 0

    def stride(self, i):
        return self.a.strides[i] // self.a.itemsize


def _fake_modules(calls):
    """Fake ``torch``, ``triton``, ``triton.testing`` and a ported kernel."""
    import types

    import numpy as np

    rng = np.random.default_rng(0)
    torch = types.ModuleType("torch")
    torch.float16, torch.bfloat16, torch.__version__ = "float16", "bfloat16", "fake"
    torch.version = types.SimpleNamespace(cuda="fake")
    torch.manual_seed = lambda s: None
    torch.randn = lambda shape, device=None, dtype=None: _T(
        rng.random([min(v, 32) for v in shape]).astype("float32"))
    torch.empty = lambda shape, device=None, dtype=None: _T(
        np.zeros([min(v, 32) for v in shape], "float32"))

    def matmul(a, b, out):
        out.a[...] = a.a @ b.a

    torch.matmul = matmul
    torch.cuda = types.SimpleNamespace(is_available=lambda: True,
                                       get_device_name=lambda: "fake",
                                       synchronize=lambda: None, empty_cache=lambda: None)
    testing = types.ModuleType("triton.testing")

    def do_bench(fn, warmup, rep, quantiles):
        fn()
        calls.append("bench")
        return [1.0, 0.9, 1.1]

    testing.do_bench = do_bench
    triton = types.ModuleType("triton")
    triton.__version__, triton.testing = "fake", testing

    class Compiled:
        def __init__(self, kw):
            self.n_regs, self.n_spills = 100 + kw["BLOCK_N"] // 8, 0
            self.metadata = types.SimpleNamespace(shared=40960)
            self.asm = {"ptx": "@%p1 ld.global.b16 { %rs1 }, [ %rd1 + 0 ];", "ttgir": "#shared"}

        def _init_handles(self):
            pass

    class Kernel:
        def warmup(self, *args, grid, **kw):
            calls.append("compile")
            if kw["BLOCK_M"] == 256 and kw["BLOCK_N"] == 64:
                raise RuntimeError("out of resource: shared memory")
            return Compiled(kw)

        def __getitem__(self, grid):
            def launch(a, b, c, *rest, **kw):
                c.a[...] = a.a @ b.a
            return launch

    port = types.SimpleNamespace(matmul_kernel=Kernel())
    return torch, triton, testing, port


def test_device_part_with_fakes(diag, tmp_path, monkeypatch):
    """The device part's bookkeeping on fakes: rows, columns, errors, asm dumps, timings."""
    import autotile.measure.gpu as gpu

    calls: list[str] = []
    torch, triton, testing, port = _fake_modules(calls)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    monkeypatch.setattr(gpu, "port_to_triton", lambda kernels: port)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    assert diag.main(["--out", str(tmp_path), "--shapes",
                      "352x11000x6992:float16,288x9000x8192:float16", "--rounds", "2"]) == 0
    with (tmp_path / "diag_matmul_regs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 21 and calls.count("compile") == 2 * 21
    assert [r["fresh_compile"] for r in rows].count("1") == 21  # same specialisation
    bad = [r for r in rows if r["error"]]
    assert [r["config"] for r in bad] == ["256x64x128 G8 w4 s4"] * 2
    assert "out of resource" in bad[0]["error"] and bad[0]["median_ms"] == ""
    ok = next(r for r in rows if r["config"] == "128x64x32 G8 w4 s4")
    assert (ok["n_regs"], ok["shared_bytes"], ok["b_scalar"]) == ("108", "40960", "1")
    assert (ok["ptx_ld_global"], ok["ptx_ld_global_vec"]) == ("1", "0")
    # 108 -> 112 registers x 128 threads: 4 programs; 4 x 41 KB -> 164 KB carveout
    assert (ok["blocks_per_sm_compiled"], ok["l1_left_kb_compiled"]) == ("4", "92")
    assert float(ok["rel_error"]) < 1e-6 and float(ok["pct_of_best"]) == 100.0
    # 20 configs that compiled and cuBLAS, 2 rounds, 2 shapes
    assert calls.count("bench") == 2 * 2 * 21
    assert len(list((tmp_path / "asm").iterdir())) == 6  # 3 configs x (ttgir, ptx), 1st shape


def test_model_occupancy_of_255_registers(diag):
    # 255 compiled registers run (2 programs of 4 warps, 1 of 8); before the fix the
    # rounding to 256 made eq. 3 call them infeasible (0)
    assert diag.model_occupancy(255, 40960, 4) == (2, "registers")
    assert diag.model_occupancy(255, 81920, 8) == (1, "registers")
    assert diag.model_occupancy(164, 36864, 4) == (3, "registers")  # 168 x 128 threads
    assert diag.model_occupancy(255, 229376, 8) == (1, "smem")


def test_report_of_the_session_12_run(diag, capsys):
    assert diag.main(["--part", "report"]) == 0
    out = capsys.readouterr().out
    # the v6 miss: eq. 2 says 120 registers (4 programs), the compiler 164 (3)
    assert "| 352x11000x6992:float16 | 128x64x32 G8 w4 s4 | 164 (0) | 3 | 120 | 4 | 77.4% |" in out
    assert "agree on 46 of 70" in out
    # 128x64x64 at 3000 x 5000 x 2000: s2 0.810 of s4's time, the shipped model 1.000
    assert "| 3000x5000x2000:float16 | 128x64x64 G8 w4 s4 | s2 | 0.810 | 1.000 | 0.655 |" in out


def test_report_with_predictions_of_other_shapes(diag):
    """A device run and predictions of other shapes: a ValueError naming the shapes."""
    ab = ROOT / "benchmarks" / "h200" / "data" / "diag_matmul_regs_ab_predictions.csv"
    with pytest.raises(ValueError, match=r"no predictions for shape\(s\) "
                       r"2000x3000x16384:bfloat16, 288x9000x8192:float16"):
        diag.main(["--part", "report", "--predictions", str(ab)])


def test_report_leaves_out_untimed_shapes(diag, tmp_path, capsys):
    """A shape whose timing was skipped (past --deadline-s) is named and left out."""
    src = ROOT / "benchmarks" / "h200" / "data" / "diag_matmul_regs_s12" / "diag_matmul_regs.csv"
    with src.open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if r["shape"] == "3000x5000x2000:float16":
            r["median_ms"] = r["pct_of_best"] = ""
    with (tmp_path / "diag_matmul_regs.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert diag.main(["--part", "report", "--measured", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3000x5000x2000:float16: no tutorial config timed" in out
    assert "| 352x11000x6992:float16 | 1 | 128x128x32 G8 w4 s4 (0.5714) |" in out


def test_committed_ab_predictions(diag):
    """The A-and-B-scalar predictions: the shapes of SHAPES_AB, every config."""
    path = ROOT / "benchmarks" / "h200" / "data" / "diag_matmul_regs_ab_predictions.csv"
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 21
    assert {r["shape"] for r in rows} == {f"{m}x{n}x{k}:{d}" for m, n, k, d in
                                          diag.parse_shapes(diag.SHAPES_AB)}
    assert all(r["a_scalar"] == "1" and r["b_scalar"] == "1" for r in rows)
    picks = {r["shape"]: r["config"] for r in rows if r["model_pick"] == "1"}
    assert picks["2500x7000x3000:float16"] == "128x64x32 G8 w4 s4"
