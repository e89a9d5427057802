"""L2 traffic mechanisms tried against ncu and not kept (issue #13, "Traffic"; CPU only).

Replays the 143 model-feasible ncu launches of :data:`h200_traffic_v2.SETS`
(seven shapes; all in sample: the v2 held-out file was looked at before these
were tried) under variants of DRIFT that ``docs/gpu_model.md`` §2.5 lists as
"tried and not kept", and prints the launches within 15 % of ncu per variant,
file and shape. Each variant uses the measurer's schedule (probe prefix of
4,096 programs, its ``k_merge`` and blocks per SM) on the 60 MiB L2.

* ``const s``: DRIFT's replay with a constant stagger ``s`` (``s = 0.5`` is DRIFT);
  the rules below pick one of these per launch, on the 1/8 grid.
* ``rule f s w0``: stagger ``s * min(1, f / w0)`` rounded to the grid, ``f`` one of
  waves (``programs / (132 b)``), waves x blocks per SM, K steps (merged), waves
  x K steps; ``s`` and ``w0`` chosen by the most launches within 15 % (in sample
  and leave one shape out).
* ``spread s [w0]``: slot ``i`` of the ``132 b`` slots starts ``s T i / (132 b)``
  steps late (``T``: steps of a program); with ``w0``, every slot starts at 0
  and the programs of the first ``w0`` waves run ``1 + s i / (132 b w0)`` times
  slower, so the spread grows over ``w0`` waves.
* ``wave0 s``: all slots start together; the first-wave program of the ``k``-th
  resident of an SM runs ``1 + s k / b`` times slower (DRIFT's stagger from the
  second wave on). Bytes of a probe prefix: the first wave's alone, plus the
  rest scaled.
* ``split map serve s``: two L2 partitions simulated separately, each an LRU of
  half the L2 fed only by the loads of its SMs (SM ``j`` of slot ``j mod 132``
  in partition ``j mod 2`` for ``map = inter``, ``j >= 66`` for ``block``);
  with ``serve`` a miss that the other partition holds is served by it (and
  refreshes it there), otherwise every miss is an HBM read; stagger ``s``.

Usage::

    python benchmarks/h200/h200_traffic_tried.py   # about 8 min on 2 shared cores
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_traffic_v2 import Predictor, load_launches, mean_abs_log, within  # noqa: E402

from autotile.measure.gpu import H200_MEASURED_L2, L2Model  # noqa: E402
from autotile.measure.gpu._l2sim import (  # noqa: E402
    _heap_pop,
    _heap_push,
    _sim_timed,
    _stagger_starts,
    _touch,
    simulate_l2,
)
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule  # noqa: E402

N_SMS = H200_MEASURED_L2.n_sms
#: Constant staggers replayed (the grid the rules round to).
STAGGERS = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0)
#: Rules: feature name -> candidate ``w0`` (stagger candidates :data:`RULE_S`).
RULE_W0 = {"waves": (0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32),
           "waves x b": (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64),
           "K steps": (20, 40, 80, 120, 160, 240, 320, 480, 640, 960, 1280),
           "waves x K steps": (50, 100, 200, 300, 400, 600, 800, 1200, 1600, 2400, 3200)}
RULE_S = (0.25, 0.375, 0.5, 0.625, 0.75, 1.0)
SPREAD = ((0.5, 0), (0.5, 4), (0.75, 0), (1.0, 0), (1.0, 4))
WAVE0 = (0.5, 0.75, 1.0)
SPLIT = (("inter", True, 0.5), ("block", True, 0.5), ("inter", True, 0.0),
         ("block", True, 0.0), ("inter", False, 0.5))


@numba.njit(cache=False, nogil=True)
def _sim_split(prog_seg_ptr, seg_n_steps, seg_op_ptr, op_base, op_stride, op_lo,  # type: ignore[no-untyped-def]
               op_hi, op_write, tb, n_conc, cap, p_hi, start0, part_of_slot, serve):
    """``_sim_timed`` with one LRU of ``cap`` bytes per partition; returns HBM read bytes."""
    n_t = tb.size
    prv = np.full((2, n_t), -1, np.int64)
    nxt = np.full((2, n_t), -1, np.int64)
    inc = np.zeros((2, n_t), np.bool_)
    st0 = np.array([-1, -1, 0], np.int64)
    st1 = np.array([-1, -1, 0], np.int64)
    miss = 0
    hk = np.empty(n_conc + 1, np.float64)
    hp = np.empty(n_conc + 1, np.int64)
    cur = np.empty(p_hi, np.int64)
    loc = np.zeros(p_hi, np.int64)
    done = np.zeros(p_hi, np.int64)
    t0 = np.zeros(p_hi, np.float64)
    slot = np.zeros(p_hi, np.int64)
    n = 0
    nxt_p = min(n_conc, p_hi)
    for j in range(nxt_p):
        t0[j] = start0[j]
        cur[j] = prog_seg_ptr[j]
        slot[j] = j
        n = _heap_push(hk, hp, n, t0[j], j)
    while n > 0:
        _, p, n = _heap_pop(hk, hp, n)
        s = cur[p]
        t = loc[p]
        pa = part_of_slot[slot[p]]
        if s < prog_seg_ptr[p + 1]:
            for o in range(seg_op_ptr[s], seg_op_ptr[s + 1]):
                if op_lo[o] <= t and t < op_hi[o] and not op_write[o]:
                    tile = op_base[o] + op_stride[o] * t
                    if pa == 0:
                        if not _touch(tile, tb, cap, prv[0], nxt[0], inc[0], st0):
                            if serve and inc[1, tile]:
                                _touch(tile, tb, cap, prv[1], nxt[1], inc[1], st1)
                            else:
                                miss += tb[tile]
                    elif not _touch(tile, tb, cap, prv[1], nxt[1], inc[1], st1):
                        if serve and inc[0, tile]:
                            _touch(tile, tb, cap, prv[0], nxt[0], inc[0], st0)
                        else:
                            miss += tb[tile]
            done[p] += 1
            if t + 1 >= seg_n_steps[s]:
                cur[p] = s + 1
                loc[p] = 0
            else:
                loc[p] = t + 1
        if cur[p] < prog_seg_ptr[p + 1]:
            n = _heap_push(hk, hp, n, t0[p] + done[p], p)
        elif nxt_p < p_hi:
            q = nxt_p
            nxt_p += 1
            t0[q] = t0[p] + done[p]
            cur[q] = prog_seg_ptr[q]
            slot[q] = slot[p]
            n = _heap_push(hk, hp, n, t0[q], q)
    return miss


def replay(ln: dict[str, Any]) -> dict[str, float]:
    """HBM read bytes of one launch under every variant (name -> bytes)."""
    c = ln["cfg"]
    sched, n_prog = matmul_tile_schedule(*ln["shape"], c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"],
                                         c["GROUP_M"], k_merge=ln["k_merge"],
                                         max_probe_programs=4096)
    b = ln["b"]
    n_conc = N_SMS * b
    l2 = H200_MEASURED_L2.l2_bytes
    cap = l2 // 2
    p_hi, scale = sched.n_programs, 1.0
    if n_prog > sched.n_programs:
        full = (sched.n_programs // n_conc) * n_conc
        p_hi = full if full > 0 else sched.n_programs
        scale = n_prog / p_hi
    s = sched
    steps = float(s.seg_n_steps[s.prog_seg_ptr[0]:s.prog_seg_ptr[1]].sum())
    args = (s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base, s.op_stride, s.op_lo,
            s.op_hi, s.op_write, s.tile_bytes, n_conc, cap)
    out: dict[str, float] = {}
    for st in STAGGERS:
        out[f"const {st}"] = simulate_l2(sched, l2_bytes=l2, n_concurrent=n_conc,
                                         total_programs=n_prog, model=L2Model(st, 2),
                                         n_sms=N_SMS).hbm_read_bytes
    pos = (np.arange(p_hi) % n_conc) / n_conc
    wave = np.arange(p_hi) // n_conc
    n0 = min(n_conc, p_hi)
    for sv, w0 in SPREAD:
        if w0 == 0:
            start, step = sv * steps * pos[:n0], np.ones(p_hi)
        else:
            start, step = np.zeros(n0), 1.0 + np.where(wave < w0, sv * pos / w0, 0.0)
        out[f"spread {sv} {w0}"] = float(_sim_timed(
            *args, p_hi, np.ascontiguousarray(start), np.ascontiguousarray(step))[2]) * scale
    k = np.arange(p_hi) // N_SMS
    for sv in WAVE0:
        step = np.where(np.arange(p_hi) < n_conc, 1.0 + sv * k / b, 1.0)

        def sim(ph: int, step: np.ndarray = step) -> float:
            return float(_sim_timed(*args, ph, np.zeros(min(n_conc, ph)),
                                    np.ascontiguousarray(step[:ph]))[2])
        tot = sim(p_hi)
        if n_prog > p_hi and p_hi > n_conc:
            x0 = sim(n_conc)
            tot = x0 + (tot - x0) * (n_prog - n_conc) / (p_hi - n_conc)
        elif n_prog > p_hi:
            tot *= n_prog / p_hi
        out[f"wave0 {sv}"] = tot
    sm = np.arange(n_conc) % N_SMS
    for mp, serve, sv in SPLIT:
        part = (sm % 2) if mp == "inter" else (sm >= N_SMS // 2).astype(np.int64)
        base = _stagger_starts(s, sv, n_conc, N_SMS).astype(np.float64)
        out[f"split {mp} {'serve' if serve else 'no-serve'} {sv}"] = float(_sim_split(
            *args, p_hi, base, part.astype(np.int64), serve)) * scale
    return out


def main() -> int:
    launches = load_launches(Predictor())
    with ThreadPoolExecutor(2) as ex:  # the numba replays release the GIL
        res = list(ex.map(replay, launches))
    meas = np.array([ln["ncu"] for ln in launches])
    shapes = np.array(["x".join(map(str, ln["shape"])) for ln in launches])
    sets = np.array([ln["set"] for ln in launches])
    allsel = np.ones(len(meas), bool)
    print(f"{len(meas)} launches (all in sample); within 15 % of ncu per variant\n")
    print("| variant | all | mean abs log | " + " | ".join(sorted(set(sets))) + " | "
          + " | ".join(sorted(set(shapes))) + " |")
    print("|---|---:|---:|" + "---:|" * (len(set(sets)) + len(set(shapes))))
    for name in res[0]:
        p = np.array([r[name] for r in res])
        cells = [str(int(within(p[sets == v], meas[sets == v]).sum())) for v in sorted(set(sets))]
        cells += [str(int(within(p[shapes == v], meas[shapes == v]).sum()))
                  for v in sorted(set(shapes))]
        print(f"| {name} | {int(within(p, meas).sum())} | {mean_abs_log(p, meas):.3f} | "
              + " | ".join(cells) + " |")
    # rules: stagger s * min(1, f / w0) on the grid of constant staggers
    grid = np.array([[r[f"const {st}"] for st in STAGGERS] for r in res])
    stag = np.array(STAGGERS)
    n_prog = np.array([-(-ln["shape"][0] // ln["cfg"]["BLOCK_M"])
                       * -(-ln["shape"][1] // ln["cfg"]["BLOCK_N"]) for ln in launches])
    b = np.array([ln["b"] for ln in launches])
    ksteps = np.array([-(-ln["shape"][2] // ln["cfg"]["BLOCK_K"]) for ln in launches])
    w = n_prog / (N_SMS * b)
    feats = {"waves": w, "waves x b": w * b, "K steps": ksteps, "waves x K steps": w * ksteps}

    def rule(f: np.ndarray, sv: float, w0: float) -> np.ndarray:
        j = np.abs(stag[None, :] - (sv * np.minimum(1.0, f / w0))[:, None]).argmin(axis=1)
        return grid[np.arange(len(meas)), j]

    def key(p: np.ndarray, sel: np.ndarray) -> tuple[int, float]:
        return int(within(p[sel], meas[sel]).sum()), -mean_abs_log(p[sel], meas[sel])

    print("\n| rule | in sample (s, w0) | leave one shape out | with s = 0.5 kept: in sample | "
          "leave one shape out |")
    print("|---|---:|---:|---:|---:|")
    for fname, f in feats.items():
        cells = []
        for svs in (RULE_S, (0.5,)):
            cands = [(sv, w0) for sv in svs for w0 in RULE_W0[fname]]
            best = max(cands, key=lambda c: key(rule(f, *c), allsel))
            pooled = np.empty(len(meas))
            for v in sorted(set(shapes)):
                te = shapes == v
                c = max(cands, key=lambda c: key(rule(f, *c), ~te))
                pooled[te] = rule(f, *c)[te]
            cells += [f"{key(rule(f, *best), allsel)[0]} {best}", str(key(pooled, allsel)[0])]
        print(f"| {fname} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
