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
