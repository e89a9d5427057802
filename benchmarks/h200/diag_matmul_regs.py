"""Registers, spills, shared memory and times of tutorial 03's 16 matmul configs (H200 diagnostic).

Why: the GPU model's zero-shot pick misses >= 90 % of the best tutorial-03 config at the
shapes whose B is loaded with scalar loads (N % 16 != 0) and M is small (352 x 11000 x
6992: 77.9 %, 288 x 9000 x 8192: 80.5 %, 2000 x 3000 x 16384 bf16: 80.0 %; see
docs/results/autotune_gpu.md). Its register estimate (eq. 2) decides how many programs
share an SM (eq. 3), and eq. 5d runs the scalar chains of those programs; this script
reads what Triton actually compiled.

Two parts:

* ``--part device`` (default; H200, torch and triton, no optuna): the library matmul
  kernel (``autotile.kernels.matmul_kernel`` ported to ``triton.jit``, as
  ``autotune_gpu.py`` runs it) is compiled for each of tutorial 03's 16 configs
  (``h200_configs.TUTORIAL_CONFIGS``) and the five of :data:`STAGE_SWEEP` (tutorial
  configs with fewer stages: a test of the L1 left by the shared-memory carveout) at
  each shape of ``--shapes`` (default
  :data:`SHAPES`: four with B scalar, two controls with B vectorised), from one fresh
  ``TRITON_CACHE_DIR``. Per config it records ``n_regs``, ``n_spills``, shared memory
  (``metadata.shared``, bytes), the compile wall time (``compile_s``; shapes with the same
  specialisation, i.e. the same dtype and the same sizes divisible by 16, reuse the
  compiled kernel: ``fresh_compile`` says which compile was real), static PTX counts of
  global loads (all / vectorised), ``cp.async`` copies, ``ldmatrix``, ``mma``/``wgmma``
  and shared-memory stores, the resident programs per SM that the compiled registers and
  shared memory allow (the model's eq. 3 applied to them) and the L1 those programs'
  shared memory leaves (:func:`l1_left_kb`), and the relative error of the
  output against ``torch`` (fp32). Then every config and ``torch.matmul`` (cuBLAS) are
  timed in ``--rounds`` interleaved rounds (a fresh random order each round), each a
  ``triton.testing.do_bench`` median (L2 flushed). Writes to ``--out``:
  ``diag_matmul_regs.csv`` (one row per shape and config, ``source`` tutorial or
  stage_sweep: the compile columns plus the median time and % of the best tutorial
  config), ``diag_matmul_regs_rounds.csv`` (every
  timing), ``diag_matmul_regs_env.json`` and the TTGIR and PTX of the configs named by
  ``--dump-asm`` at the first shape of each specialisation (``asm/``). Past
  ``--deadline-s`` it starts no new shape and no timing rounds (a shape takes about 3-5 s
  to time and 10-30 s to compile a new specialisation); a failing config or shape is
  recorded and skipped.
* ``--part predict`` (CPU): the model's zero-shot time of every config at the same
  shapes (``autotile.perf_model`` as in ``zero_shot.py``), its rank and pick, and the
  model's registers per thread (eq. 2), shared memory (eq. 1) and resident programs per
  SM (eq. 3) with their limiter and the L1 they leave (the stage-sweep configs get the
  model's time, no rank), and the times and ranks of the candidate :data:`CANDIDATE_L1`
  (``cand_l1_time_s``, ``cand_l1_rank``), to
  ``benchmarks/h200/data/diag_matmul_regs_predictions.csv`` (committed before the device
  run).

Run on the H200 (about 70-100 s: 63 compiles, 21 configs and cuBLAS timed 3 times at 6
shapes; ``--deadline-s`` keeps it under 150 s)::

    python benchmarks/h200/diag_matmul_regs.py --out $OUT

and on a CPU::

    python benchmarks/h200/diag_matmul_regs.py --part predict
    python benchmarks/h200/diag_matmul_regs.py --part report [--measured DIR --predictions CSV]

:data:`SHAPES_AB` (shapes with A and B scalar, where the residency candidates of session
12 lost held out) has its predictions in ``data/diag_matmul_regs_ab_predictions.csv``
(committed before any device run at those shapes)::

    python benchmarks/h200/diag_matmul_regs.py --shapes 2500x7000x3000:float16,\
4000x4600x2600:float16,3100x3300x4100:bfloat16 --deadline-s 240 --out $OUT

``--part report`` compares a device run (default: session 12's,
``data/diag_matmul_regs_s12/``) with the committed predictions. That run's
``blocks_per_sm_compiled`` (and ``limiter_compiled``, ``l1_left_kb_compiled``) is wrong
for every kernel compiled with 255 registers: 255 rounded up to 256 read as infeasible
(0 programs, 256 KB of L1); the report recomputes them (fixed in :func:`model_occupancy`).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.h200_configs import TUTORIAL_CONFIGS  # noqa: E402

#: Default shapes ``MxNxK:dtype``: four with B scalar (N % 16 = 8): the three zero-shot
#: misses (352 x 11000 x 6992 and 288 x 9000 x 8192 fp16, 2000 x 3000 x 16384 bf16) and
#: one where the pick was the best (3000 x 5000 x 2000 fp16); two controls with small M
#: and B vectorised (384 x 10240 x 6144, 704 x 14000 x 4000 fp16; the pick was the best).
#: All six were timed before (data/autotune_gpu*/). Ordered so that the three
#: specialisations (fp16 B scalar, fp16 vectorised, bf16 B scalar) compile early.
SHAPES = ("352x11000x6992:float16,384x10240x6144:float16,288x9000x8192:float16,"
          "2000x3000x16384:bfloat16,704x14000x4000:float16,3000x5000x2000:float16")

#: Shapes with A and B scalar (N and K not multiples of 16), all timed before (v3, v4):
#: the residency candidates of session 12 (``zero_shot_scalar_b.py --candidate address``,
#: ``share_address``, ``share_linear``) lose there held out; their compiled registers were
#: never logged. Three specialisations (M % 16 differs between the two fp16 shapes).
SHAPES_AB = "2500x7000x3000:float16,4000x4600x2600:float16,3100x3300x4100:bfloat16"

#: Configs whose TTGIR and PTX are written to ``asm/`` by default: the model's pick and the
#: best config at the two fp16 misses, and 128x64x64 (the slowest scalar B rate; its
#: TTGIR's shared layout of B shows how the scalar-loaded tile is stored).
DUMP_ASM = "128x64x32 G8 w4 s4,128x128x32 G8 w4 s4,128x64x64 G8 w4 s4"

#: Extra configs (same order as ``TUTORIAL_CONFIGS``: BM, BN, BK, GROUP_M, num_stages,
#: num_warps): tutorial configs with fewer stages. Fewer A stages leave the resident
#: programs (where registers limit them) unchanged but shrink the shared memory, so the
#: driver's shared-memory carveout leaves more of the SM's 256 KB to L1 (128x64x64 at 3
#: programs an SM: 219 KB shared, 28 KB L1 at s4; 123 KB, 124 KB L1 at s2). If the
#: scalar B loads are slowed by a small L1 (docs/results/autotune_gpu.md, "Tried in
#: session 12"), the s2 configs gain at the B-scalar shapes more than at the controls.
STAGE_SWEEP = (
    (128, 64, 64, 8, 2, 4), (128, 64, 64, 8, 3, 4), (128, 32, 32, 8, 2, 4),
    (128, 64, 32, 8, 2, 4), (128, 128, 32, 8, 2, 4),
)

#: The ``l1_carveout`` candidate of ``zero_shot_scalar_b.py`` whose times ``--part predict``
#: adds (``cand_l1_*``): one address register per staged B element, the scalar rate scaled
#: by ``min(1, L1 KB / 128) ** 0.3``, R and L_u as shipped (selected in-sample on the 42
#: shapes; not shipped).
CANDIDATE_L1 = (1.0, 0.3, 128.0)

#: Shared-memory carveouts of a cc 9.0 SM, KB (CUDA C++ Programming Guide, "Shared Memory",
#: compute capability 9.0); the rest of the 256 KB is L1.
CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

PREDICTIONS = Path(__file__).resolve().parent / "data" / "diag_matmul_regs_predictions.csv"
#: The device run of session 12 (H200), read by ``--part report``.
MEASURED = Path(__file__).resolve().parent / "data" / "diag_matmul_regs_s12"

#: Static PTX instruction counts: column name -> pattern at the start of an instruction.
PTX_COUNTS = {
    "ptx_ld_global": r"ld\.global",
    "ptx_ld_global_vec": r"ld\.global(?:\.[\w:]+)*\.v[248]",
    "ptx_cp_async": r"cp\.async\.(?:ca|cg)",
    "ptx_ldmatrix": r"ldmatrix",
    "ptx_st_shared": r"st\.shared",
    "ptx_mma_sync": r"mma\.sync",
    "ptx_wgmma": r"wgmma\.mma_async",
}

T0 = time.perf_counter()


def log(*parts: Any) -> None:
    """Print with the seconds since the start of the process."""
    print(f"[{time.perf_counter() - T0:7.1f}s]", *parts, flush=True)


def parse_shapes(text: str) -> list[tuple[int, int, int, str]]:
    """``"MxNxK:dtype,..."`` to ``[(M, N, K, dtype), ...]``.

    Parameters
    ----------
    text : str
        Comma-separated ``MxNxK:dtype``; dtype ``float16`` (default when left out) or
        ``bfloat16``.

    Returns
    -------
    list of tuple (int, int, int, str)

    Raises
    ------
    ValueError
        If an item is not three positive integers joined by ``x``, or its dtype is not
        ``float16`` or ``bfloat16``.
    """
    out = []
    for item in text.split(","):
        dims, _, dtype = item.strip().partition(":")
        dtype = dtype or "float16"
        parts = dims.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"a shape must be MxNxK with positive integers, got {item!r}")
        if dtype not in ("float16", "bfloat16"):
            raise ValueError(f"dtype must be float16 or bfloat16, got {dtype!r} in {item!r}")
        m, n, k = (int(p) for p in parts)
        out.append((m, n, k, dtype))
    return out


def config_text(bm: int, bn: int, bk: int, g: int, s: int, w: int) -> str:
    """``"BMxBNxBK Gg ww ss"``, as in ``autotune_gpu.py``'s CSVs."""
    return f"{bm}x{bn}x{bk} G{g} w{w} s{s}"


def ptx_counts(ptx: str) -> dict[str, int]:
    """Static counts of :data:`PTX_COUNTS`'s instructions in a PTX listing."""
    lines = []
    for ln in ptx.splitlines():
        ln = ln.strip()
        if ln.startswith("@"):  # a predicated instruction: drop the predicate
            ln = ln.split(None, 1)[-1]
        lines.append(ln)
    return {k: sum(1 for ln in lines if re.match(p, ln)) for k, p in PTX_COUNTS.items()}


def l1_left_kb(blocks_per_sm: int, shared_bytes: int) -> int:
    """KB of the SM's 256 KB left to L1 by the smallest carveout that fits the programs.

    Assumes the driver picks the smallest carveout of :data:`CARVEOUTS_KB` that holds
    ``blocks_per_sm`` programs of ``shared_bytes`` each plus its 1 KB reserve; 0 when
    none does.

    Parameters
    ----------
    blocks_per_sm : int
        Resident programs per SM.
    shared_bytes : int
        Shared memory of one program, bytes.

    Returns
    -------
    int
        L1 left, KB (``256 - carveout``).
    """
    need_kb = blocks_per_sm * (shared_bytes + 1024) / 1024
    fits = [c for c in CARVEOUTS_KB if c >= need_kb]
    return 256 - fits[0] if fits else 0


def all_configs() -> list[tuple[tuple[int, ...], str]]:
    """Tutorial 03's 16 configs then :data:`STAGE_SWEEP`, each with its source."""
    out: list[tuple[tuple[int, ...], str]] = [(c, "tutorial") for c in TUTORIAL_CONFIGS]
    return out + [(c, "stage_sweep") for c in STAGE_SWEEP]


def model_occupancy(regs: int, shared: int, num_warps: int) -> tuple[int, str]:
    """Resident programs per SM and limiter for compiled registers and shared memory (eq. 3).

    Registers are rounded up to the allocation unit of 8 per thread, as the model does,
    and capped at 255 (a kernel compiled with 255 registers runs: 2 programs of 4 warps).

    Parameters
    ----------
    regs : int
        Registers per thread of the compiled kernel (``n_regs``).
    shared : int
        Shared memory per program, bytes (``metadata.shared``).
    num_warps : int
        Warps per program.

    Returns
    -------
    tuple of (int, str)
        Programs per SM and the limiter named by ``occupancy``.
    """
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.measure.gpu._time_model import occupancy

    # A compiled count never exceeds the 255 a thread may use, but 255 rounds up to 256,
    # which eq. 3 reads as infeasible (before session 12's fix every 255-register
    # kernel, all of which ran, got 0 programs). 255 gives the same floors as 256 for
    # 1-32 warps (65536 // (255 * 32 * w) == 65536 // (256 * 32 * w)).
    regs = min(-(-regs // 8) * 8, H200_MEASURED_L2.max_regs_per_thread)
    occ = occupancy(H200_MEASURED_L2, num_warps=num_warps, smem_bytes=shared,
                    regs_per_thread=regs)
    return occ.blocks_per_sm, occ.limiter


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (header: the union of their keys, first-seen order)."""
    fields: list[str] = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def predict(shapes: list[tuple[int, int, int, str]], out: Path) -> int:
    """The model's zero-shot predictions at ``shapes`` (CPU): see the module docstring."""
    from autotile.kernels import matmul_access
    from autotile.measure import GpuModelParams
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.measure.gpu._time_model import (
        matmul_scalar_regs_per_thread,
        matmul_smem_bytes,
        occupancy,
    )
    from benchmarks.h200.zero_shot import rank_shape
    from benchmarks.h200.zero_shot_loso import model_times

    p = GpuModelParams()
    rows = []
    for M, N, K, dtype in shapes:
        shape = f"{M}x{N}x{K}:{dtype}"
        pred, _ = rank_shape(shape)  # the zero-shot path (perf_model), tutorial configs
        ranked = sorted((n for n in pred if math.isfinite(pred[n])), key=lambda n: pred[n])
        sweep = model_times(shape, p, STAGE_SWEEP)  # not ranked: not a tutorial config
        isz = 2
        acc = matmul_access(M, N, K, isz)
        for (bm, bn, bk, g, s, w), source in all_configs():
            name = config_text(bm, bn, bk, g, s, w)
            # as autotile.measure.gpu._analytic._tile_matmul (eqs. 1-3)
            n_a, n_b = acc.n_buffers(s)
            scalar_a = 0 if acc.a.is_async else bm * bk
            scalar_b = 0 if acc.b.is_async else bk * bn
            smem = matmul_smem_bytes(bm, bn, bk, s, isz, a_buffers=n_a, b_buffers=n_b)
            regs = matmul_scalar_regs_per_thread(
                bm, bn, w, p, scalar_a_elems=scalar_a, scalar_b_elems=scalar_b,
                max_regs_per_thread=H200_MEASURED_L2.max_regs_per_thread)
            occ = occupancy(H200_MEASURED_L2, num_warps=w, smem_bytes=smem,
                            regs_per_thread=regs)
            t = pred[name] if source == "tutorial" else sweep[name]
            rows.append({"shape": shape, "config": name, "source": source,
                         "b_scalar": int(not acc.b.is_async),
                         "a_scalar": int(not acc.a.is_async),
                         "model_time_s": t if math.isfinite(t) else "",
                         "model_rank": ranked.index(name) + 1 if name in ranked else "",
                         "model_pick": int(bool(ranked) and name == ranked[0]),
                         "model_regs_per_thread": regs, "model_smem_bytes": smem,
                         "model_blocks_per_sm": occ.blocks_per_sm,
                         "model_limiter": occ.limiter,
                         "model_l1_left_kb": l1_left_kb(occ.blocks_per_sm, smem)})
        print(f"{shape}: model's pick {ranked[0]} ({pred[ranked[0]] * 1e3:.4f} ms)")
    # the candidate of session 12 (not shipped), patched in last: the patch stays
    from benchmarks.h200.zero_shot_scalar_b import patch

    patch("l1_carveout", [CANDIDATE_L1])
    for M, N, K, dtype in shapes:
        shape = f"{M}x{N}x{K}:{dtype}"
        cand = model_times(shape, p, [c for c, _ in all_configs()])
        tut = sorted((n for n in cand if math.isfinite(cand[n])
                      and n in {config_text(*c) for c in TUTORIAL_CONFIGS}),
                     key=lambda n: cand[n])
        for r in rows:
            name = str(r["config"])
            if r["shape"] == shape:
                t = cand[name]
                r["cand_l1_time_s"] = t if math.isfinite(t) else ""
                r["cand_l1_rank"] = tut.index(name) + 1 if name in tut else ""
        print(f"{shape}: the l1_carveout candidate's pick {tut[0]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(out, rows)
    print(f"wrote {out} ({len(rows)} rows)")
    return 0


def report(measured_dir: Path, predictions: Path = PREDICTIONS) -> int:
    """Compare a device run with the committed predictions (CPU; prints markdown).

    Reads ``diag_matmul_regs.csv`` of ``measured_dir`` and ``predictions``; the programs
    an SM that the compiled registers and shared memory allow are recomputed with
    :func:`model_occupancy` (the device run of session 12 wrote 0 for every 255-register
    kernel). Prints, per shape, the best tutorial config and the % of it that the
    shipped model's and the candidate's picks reach; the tutorial configs whose
    resident programs (eq. 3 on eq. 2's registers) differ from the compiled ones; and the
    stage sweep's time ratios (fewer stages over the tutorial's), measured and predicted.

    Parameters
    ----------
    measured_dir : Path
        A folder holding the device part's ``diag_matmul_regs.csv``.
    predictions : Path, default=PREDICTIONS
        The ``--part predict`` CSV.

    Returns
    -------
    int
        0.

    Raises
    ------
    FileNotFoundError
        If either CSV is missing.
    ValueError
        If a (shape, config) of the device run is not in ``predictions`` (a device run
        of other shapes than the predictions', e.g. :data:`SHAPES_AB` without
        ``--predictions data/diag_matmul_regs_ab_predictions.csv``).
    """
    with (measured_dir / "diag_matmul_regs.csv").open() as f:
        meas = list(csv.DictReader(f))
    with predictions.open() as f:
        pred = {(r["shape"], r["config"]): r for r in csv.DictReader(f)}
    missing = sorted({r["shape"] for r in meas if (r["shape"], r["config"]) not in pred})
    if missing:
        raise ValueError(f"{predictions} has no predictions for shape(s) "
                         f"{', '.join(missing)} of {measured_dir / 'diag_matmul_regs.csv'}; "
                         "pass the predictions of those shapes with --predictions")
    ms = {(r["shape"], r["config"]): float(r["median_ms"]) for r in meas if r["median_ms"]}
    timed = {r["shape"] for r in meas
             if r["source"] == "tutorial" and (r["shape"], r["config"]) in ms}
    shapes = [sh for sh in dict.fromkeys(r["shape"] for r in meas) if sh in timed]
    for sh in dict.fromkeys(r["shape"] for r in meas):
        if sh not in timed:
            print(f"{sh}: no tutorial config timed (past --deadline-s or failed): left out")
    print("| shape | B scalar | best tutorial config (ms) | model's pick: % of best | "
          "candidate's pick: % of best |")
    print("|---|---|---|---|---|")
    for sh in shapes:
        tut = {r["config"]: ms[(sh, r["config"])] for r in meas
               if r["shape"] == sh and r["source"] == "tutorial" and (sh, r["config"]) in ms}
        best = min(tut, key=lambda n: tut[n])

        def pick(col: str, sh: str = sh) -> str:
            ranked = [(int(p[col]), c) for (s, c), p in pred.items() if s == sh and p[col]]
            c = min(ranked)[1]
            return f"{c}: {100 * tut[best] / tut[c]:.1f}%" if c in tut else f"{c}: not timed"

        bs = next(r["b_scalar"] for r in meas if r["shape"] == sh)
        print(f"| {sh} | {bs} | {best} ({tut[best]:.4f}) | {pick('model_rank')} "
              f"| {pick('cand_l1_rank')} |")
    print()
    print("| shape | config | compiled regs (spills) | programs an SM: compiled | "
          "eq. 2 regs | eq. 3 programs | measured % of best |")
    print("|---|---|---|---|---|---|---|")
    n_same = n_all = 0
    for r in meas:
        if not r["n_regs"] or r["source"] != "tutorial":
            continue
        p = pred[(r["shape"], r["config"])]
        cfg = r["config"]
        w = int(cfg.split(" w")[1].split()[0])
        b, _ = model_occupancy(int(r["n_regs"]), int(r["shared_bytes"]), w)
        if not p["model_time_s"]:
            continue  # infeasible in the model (> 255 registers): not ranked
        n_all += 1
        if b == int(p["model_blocks_per_sm"]):
            n_same += 1
            continue
        print(f"| {r['shape']} | {cfg} | {r['n_regs']} ({r['n_spills']}) | {b} | "
              f"{p['model_regs_per_thread']} | {p['model_blocks_per_sm']} | "
              + (f"{float(r['pct_of_best']):.1f}% |" if r["pct_of_best"] else "not timed |"))
    print(f"\nprograms an SM agree on {n_same} of {n_all} (shape, tutorial config) pairs "
          "that the model ranks")
    print()
    print("| shape | config | fewer stages | measured: time ratio | model | candidate |")
    print("|---|---|---|---|---|---|")
    for r in meas:
        if r["source"] != "stage_sweep" or (r["shape"], r["config"]) not in ms:
            continue
        base = re.sub(r" s\d+$", " s4", r["config"])
        if (r["shape"], base) not in ms:
            continue
        p, q = pred[(r["shape"], r["config"])], pred[(r["shape"], base)]
        print(f"| {r['shape']} | {base} | {r['config'].rsplit(' ', 1)[1]} | "
              f"{ms[(r['shape'], r['config'])] / ms[(r['shape'], base)]:.3f} | "
              f"{float(p['model_time_s']) / float(q['model_time_s']):.3f} | "
              f"{float(p['cand_l1_time_s']) / float(q['cand_l1_time_s']):.3f} |")
    return 0


def compile_one(kern: Any, args: tuple[Any, ...], cfg: tuple[int, ...], grid: tuple[int],
                ) -> tuple[Any, dict[str, Any]]:
    """Compile one config through ``JITFunction.warmup``; the kernel and its columns."""
    bm, bn, bk, g, s, w = cfg
    t0 = time.perf_counter()
    k = kern.warmup(*args, grid=grid, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                    PID_ORDER="grouped", num_warps=w, num_stages=s)
    compile_s = time.perf_counter() - t0
    k._init_handles()  # raises OutOfResources (shared memory) before a launch would
    regs, spills, shared = int(k.n_regs), int(k.n_spills), int(k.metadata.shared)
    row: dict[str, Any] = {"compile_s": compile_s, "n_regs": regs, "n_spills": spills,
                           "shared_bytes": shared}
    row.update(ptx_counts(k.asm.get("ptx", "")))
    try:
        row["blocks_per_sm_compiled"], row["limiter_compiled"] = model_occupancy(
            regs, shared, w)
        row["l1_left_kb_compiled"] = l1_left_kb(row["blocks_per_sm_compiled"], shared)
    except Exception as exc:  # noqa: BLE001 - a diagnostic column only
        row["blocks_per_sm_compiled"], row["limiter_compiled"] = "", f"{exc}"[:80]
    return k, row


def device(args: argparse.Namespace) -> int:
    """The device part (see the module docstring); returns the process exit status."""
    try:
        import numpy as np
        import torch
        import triton
        import triton.testing
    except ImportError as exc:
        raise SystemExit(f"--part device needs torch and triton on a CUDA machine ({exc}); "
                         "on a CPU run --part predict") from exc
    if not torch.cuda.is_available():
        raise SystemExit("--part device needs a CUDA device: torch.cuda.is_available() is "
                         "False; on a CPU run --part predict")
    from autotile.kernels import matmul_kernel
    from autotile.measure.gpu import port_to_triton

    out: Path = args.out
    (out / "asm").mkdir(parents=True, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="triton_cache_")
    os.environ["TRITON_CACHE_DIR"] = cache
    env = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__,
           "torch": torch.__version__, "cuda": torch.version.cuda, "shapes": args.shapes,
           "rounds": args.rounds, "warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms,
           "seed": args.seed, "triton_cache": cache}
    (out / "diag_matmul_regs_env.json").write_text(json.dumps(env, indent=1))
    log("env", env)
    kern = port_to_triton([matmul_kernel]).matmul_kernel
    dump = {c.strip() for c in args.dump_asm.split(",") if c.strip()}
    seen_spec: set[tuple[Any, ...]] = set()
    rows: list[dict[str, Any]] = []
    rounds_rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(args.seed)
    n_failed = 0
    for M, N, K, dtype in parse_shapes(args.shapes):
        shape = f"{M}x{N}x{K}:{dtype}"
        if time.perf_counter() - T0 > args.deadline_s:
            log(f"{shape}: skipped, past --deadline-s={args.deadline_s:g}")
            continue
        try:
            torch.manual_seed(args.seed)
            dt = getattr(torch, dtype)
            a = torch.randn((M, K), device="cuda", dtype=dt)
            b = torch.randn((K, N), device="cuda", dtype=dt)
            c = torch.empty((M, N), device="cuda", dtype=dt)
            ref = a.float() @ b.float()
            largs = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1))
            # Triton specialises integer arguments on divisibility by 16 (and == 1)
            spec = (dtype,) + tuple(v % 16 == 0 for v in (M, N, K))
            fresh = spec not in seen_spec
            seen_spec.add(spec)
            fns: dict[str, Any] = {}
            shape_rows: dict[str, dict[str, Any]] = {}
            for cfg, source in all_configs():
                bm, bn, bk, g, s, w = cfg
                name = config_text(*cfg)
                grid = (-(-M // bm) * -(-N // bn),)
                row: dict[str, Any] = {"shape": shape, "config": name, "source": source,
                                       "b_scalar": int(N % 16 != 0),
                                       "a_scalar": int(K % 16 != 0),
                                       "fresh_compile": int(fresh)}
                try:
                    k, cols = compile_one(kern, largs, cfg, grid)
                    row.update(cols)
                    if fresh and name in dump:
                        stem = f"{shape.replace(':', '_')}__{name.replace(' ', '_')}"
                        for ext in ("ttgir", "ptx"):
                            if ext in k.asm:
                                (out / "asm" / f"{stem}.{ext}").write_text(str(k.asm[ext]))

                    def fn(cfg: tuple[int, ...] = cfg, grid: tuple[int] = grid) -> None:
                        kern[grid](*largs, BLOCK_M=cfg[0], BLOCK_N=cfg[1], BLOCK_K=cfg[2],
                                   GROUP_M=cfg[3], PID_ORDER="grouped", num_warps=cfg[5],
                                   num_stages=cfg[4])
                    c.zero_()
                    fn()
                    torch.cuda.synchronize()
                    row["rel_error"] = float((c.float() - ref).norm() / ref.norm())
                    fns[name] = fn
                    row["error"] = ""
                except Exception as exc:  # noqa: BLE001 - out of resources etc.: recorded
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                shape_rows[name] = row
                log(f"{shape} {name}: " + ", ".join(
                    f"{k}={row[k]:.3g}" if isinstance(row[k], float) else f"{k}={row[k]}"
                    for k in ("compile_s", "n_regs", "n_spills", "shared_bytes",
                              "blocks_per_sm_compiled", "error") if k in row))
            del ref
            times: dict[str, list[float]] = {n: [] for n in fns}
            if time.perf_counter() - T0 > args.deadline_s:
                log(f"{shape}: timing skipped, past --deadline-s={args.deadline_s:g}")
            else:
                fns["cuBLAS"] = lambda: torch.matmul(a, b, out=c)
                times["cuBLAS"] = []
                names = list(fns)
                for r in range(args.rounds):
                    for j in rng.permutation(len(names)):
                        q = triton.testing.do_bench(fns[names[j]], warmup=args.warmup_ms,
                                                    rep=args.rep_ms, quantiles=[0.5, 0.2, 0.8])
                        times[names[j]].append(float(q[0]))
                        rounds_rows.append({"shape": shape, "round": r, "config": names[j],
                                            "ms": float(q[0]), "p20_ms": float(q[1]),
                                            "p80_ms": float(q[2])})
            med = {n: float(np.median(v)) for n, v in times.items() if v}
            tut = [v for n, v in med.items() if n in shape_rows
                   and shape_rows[n]["source"] == "tutorial"]
            best = min(tut) if tut else math.nan
            for name, row in shape_rows.items():
                m = med.get(name)
                row["median_ms"] = m if m is not None else ""
                row["pct_of_best"] = 100.0 * best / m if m else ""
                row["cublas_ms"] = med.get("cuBLAS", "")
                rows.append(row)
            if tut:
                log(f"{shape}: best tutorial config {best:.4f} ms, cuBLAS "
                    f"{med.get('cuBLAS', math.nan):.4f} ms")
        except Exception as exc:  # noqa: BLE001 - log the shape and go on
            n_failed += 1
            log(f"{shape} FAILED: {type(exc).__name__}: {exc}")
        finally:
            if rows:
                write_csv(out / "diag_matmul_regs.csv", rows)
            if rounds_rows:
                write_csv(out / "diag_matmul_regs_rounds.csv", rounds_rows)
            torch.cuda.empty_cache()
    log(f"done; {n_failed} shape(s) failed; CSVs in {out}")
    return 1 if n_failed else 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run ``--part``; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("device", "predict", "report"), default="device")
    ap.add_argument("--out", type=Path, default=None,
                    help="device: output folder (default $OUT); predict: the CSV path "
                         f"(default {PREDICTIONS.relative_to(PREDICTIONS.parents[3])})")
    ap.add_argument("--shapes", default=SHAPES, help="comma-separated MxNxK:dtype")
    ap.add_argument("--measured", type=Path, default=MEASURED,
                    help="report: the device run's folder (default: session 12's)")
    ap.add_argument("--predictions", type=Path, default=PREDICTIONS,
                    help="report: the predictions CSV (default: session 12's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup-ms", type=float, default=5.0)
    ap.add_argument("--rep-ms", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump-asm", default=DUMP_ASM,
                    help="comma-separated config texts whose TTGIR and PTX go to OUT/asm/")
    ap.add_argument("--deadline-s", type=float, default=110.0,
                    help="start no shape and no timing rounds after this many seconds")
    args = ap.parse_args(argv)
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as exc:
        ap.error(str(exc))
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {args.rounds}")
    if args.part == "predict":
        return predict(shapes, args.out or PREDICTIONS)
    if args.part == "report":
        try:
            return report(args.measured, args.predictions)
        except FileNotFoundError as exc:
            ap.error(str(exc))
    if args.out is None:
        if "OUT" not in os.environ:
            ap.error("--part device needs --out DIR (or $OUT)")
        args.out = Path(os.environ["OUT"])
    return device(args)


if __name__ == "__main__":
    raise SystemExit(main())
