"""Eq. 2 and 5d changes for launches with B scalar, tried after v6 and in sessions 12-13 (CPU).

The model's zero-shot pick misses >= 90% of the best tutorial-03 config on three shapes
with B loaded by scalar loads (N % 16 != 0): 2000 x 3000 x 16384, 288 x 9000 x 8192 and
352 x 11000 x 6992 (docs/gpu_model.md §3.7, "After v6"). Candidate terms, each
crossed with eq. 5d's ``R`` (``scalar_elems_per_s_per_sm``) and ``L_u``
(``unpipelined_latency_s``), are patched into ``estimate_time`` (the library is not
changed):

* ``--candidate share``: co-resident scalar chains share the SM's scalar rate: one
  chain step takes ``L_u + c**gam * e / R`` with ``c = min(blocks_per_sm, ceil(n_programs
  / n_sms))`` the programs resident on the busiest SM (``gam = 0``: the shipped model);
* ``--candidate overhead``: a fixed SM cost per program and K step, ``E0`` element
  equivalents (``E0 / R`` seconds) added to ``e`` in both eq. 5d terms (``E0 = 0``: the
  shipped model);
* ``--candidate address``: one register per staged B element for its address on top of
  the one its value takes (eq. 2), as A's ``scalar_a_extra_regs``: with lanes and warps
  filling B's contiguous N first, each of a thread's B elements lies in another K row
  (row offsets ``k * N``, N not a compile-time constant). Capped at 255 registers (an
  address can be recomputed instead of spilled; uncapped, 256x128x128 and 128x256x64
  become infeasible although they ran without a sign of spilling). It makes 128x64x32
  (104 + 16 + 16 registers) fit 3 programs an SM instead of 4;
* ``--candidate serial_tensor``: the SM does not overlap a program's tensor work with
  scalar loads: each program step adds its FLOPs at ``f`` of the SM's tensor peak to both
  eq. 5d terms (``f = 0``: off), crossed with the address registers (0 or 1);
* ``--candidate share_address`` (session 12, after the register diagnostic): the
  address registers (0 or 1; with them eq. 2 gives the compiled 3 programs an SM of
  128x64x32, ``diag_matmul_regs.py``) crossed with ``share``'s ``gam`` (0-1): fewer
  resident programs then cost only the latency they no longer hide;
* ``--candidate share_linear`` (session 12): the same with a chain step of
  ``L_u + (1 + s c) e / R`` (``s`` 0-1, ``L_u`` down to 0.25 us), the form the
  diagnostic's per-round step times suggest (128x128x32, 2 resident, and 128x64x64, 3,
  load the same 4,096 B elements a step and take 2.5 and 3.1 us);
* ``--candidate l1_carveout`` (session 12): the address registers (0 or 1) and, for
  launches with B scalar, ``e`` divided by ``min(1, L1 / ref) ** eta`` in both eq. 5d
  terms, where ``L1`` is what the smallest shared-memory carveout of
  :data:`CARVEOUTS_KB` that holds the SM's resident programs leaves of its 256 KB
  (``eta`` 0-0.5, ``ref`` 64 or 128 KB; ``eta = 0``: off). ``--fix-rate`` keeps ``R``
  and ``L_u`` at the shipped values.
* ``--candidate address_once`` (session 13, after the A-and-B register diagnostic;
  **shipped since**): B's phase of values and addresses ``e_B + min(x_B e_B, cap)``
  (per thread) joins eq. 2's maximum with A's instead of adding to it, so the address
  overhead is taken once a launch: ``GpuModelParams.scalar_b_extra_regs`` and
  ``scalar_b_address_regs_cap``. Its term ``(x_B, cap) = (1, 16)`` was chosen on the
  compiled registers alone (``--residency 0.5,1,1:16,...``: the programs an SM of eq. 3
  against the compiled ones at the 100 (shape, config) pairs of both diagnostics);
  ``--on`` selects only among grid points with the term on.

Leave-one-shape-out over the 34 shapes with timings before v6 and over the 42 with v6
(criterion: mean pick fraction plus mean Spearman, as in ``zero_shot_loso.py``), and
leave-one-B-scalar-shape-out (the criterion on the other B-scalar shapes only); each pool
also prints the grid point selected on all of it (in-sample). Shapes with a scalar
operand (N or K not a multiple of 16) are rescored at every grid point, the others once
(before session 12 only B-scalar shapes were rescored, although share, overhead and
serial_tensor also act on the three shapes with only A scalar).

Every candidate is scored against the model before session 13 (``scalar_b_extra_regs =
0``); ``address_once``'s term is that model's change.

Run ``python benchmarks/h200/zero_shot_scalar_b.py --candidate C [--fix-rate] [--on]`` with
C one of share, overhead, address, serial_tensor, l1_carveout, share_address, share_linear,
address_once (about 5-40 s each; share_address about 3 min), and ``--candidate
address_once --residency 1:16`` (5 s) for the residency agreement.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.zero_shot import DATA, read_summary  # noqa: E402
from benchmarks.h200.zero_shot_loso import (  # noqa: E402
    before_after_v7,
    loso_criterion,
    measured,
    model_times,
    score,
)

GRIDS = {
    "share": list(itertools.product((0.0, 0.5, 1.0), (4e9, 6e9, 8e9), (0.85e-6, 1.7e-6))),
    "overhead": list(itertools.product((0.0, 1024.0, 2048.0, 3072.0, 4096.0), (4e9, 5e9),
                                       (1.2e-6, 1.7e-6, 2.2e-6))),
    "address": list(itertools.product((0.0, 1.0), (3e9, 4e9, 5e9),
                                      (0.6e-6, 0.85e-6, 1.2e-6, 1.7e-6))),
    "serial_tensor": list(itertools.product(
        itertools.product((0.0, 1.0), (0.0, 0.5, 0.25, 0.15)), (4e9, 5e9, 6e9),
        (0.85e-6, 1.7e-6))),
    # (address registers, eta, L1 reference KB); eta = 0 is off (one reference kept)
    "l1_carveout": [g for g in itertools.product(
        [k for k in itertools.product((0.0, 1.0), (0.0, 0.15, 0.3, 0.5), (64.0, 128.0))
         if k[1] > 0 or k[2] == 128.0], (4e9, 5e9, 6e9), (0.85e-6, 1.2e-6, 1.7e-6))],
    # ((address registers, gam), R, L_u); (0, 0) is the shipped model
    "share_address": list(itertools.product(
        itertools.product((0.0, 1.0), (0.0, 0.5, 0.75, 1.0)), (4e9, 5e9, 6e9, 8e9),
        (0.85e-6, 1.2e-6, 1.7e-6))),
    # ((address registers, s), R, L_u): a step L_u + (1 + s c) e / R; s = 0 is shipped
    "share_linear": list(itertools.product(
        itertools.product((0.0, 1.0), (0.0, 0.25, 0.5, 1.0)), (4e9, 3e9, 6e9),
        (1.7e-6, 0.25e-6, 0.5e-6, 0.85e-6))),
    # ((x_B, cap), R, L_u), session 13: 0 is the shipped model; (1, 16) was chosen on the
    # compiled residency alone (--residency), not on timings
    "address_once": list(itertools.product((0.0, (1.0, 16.0)), (3e9, 4e9, 5e9),
                                           (0.6e-6, 0.85e-6, 1.2e-6, 1.7e-6))),
}

#: The register diagnostics with compiled registers (``diag_matmul_regs.py``): session 12's
#: four B-only-scalar shapes and two controls, session 13's three A-and-B-scalar shapes.
DIAG_RUNS = ("diag_matmul_regs_s12", "diag_matmul_regs_ab")

#: Shared-memory carveouts of an H100/H200 SM, KB (CUDA C++ Programming Guide, "Shared
#: Memory" for compute capability 9.0); the rest of the 256 KB is L1.
CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def patch(candidate: str, value: list[Any]) -> None:
    """Wrap the matmul model's ``estimate_time`` or its register count (``address``).

    ``value[0]`` is gam, E0, the address registers per staged B element, or for
    ``serial_tensor`` the pair (address registers, f).
    """
    import autotile.measure.gpu._analytic as an

    if candidate in ("share_address", "share_linear"):
        patch("address", value)  # reads value[0][0]
        orig_s = an.estimate_time

        def patched_s(hw: Any, params: Any, **kw: Any) -> Any:
            e, gam = kw.get("scalar_step_elems", 0.0), value[0][1]
            if e > 0 and gam > 0 and math.isfinite(params.scalar_elems_per_s_per_sm):
                c = min(kw["blocks_per_sm"], -(-kw["n_programs"] // hw.n_sms))
                f = gam * c if candidate == "share_linear" else c ** gam - 1.0
                extra = f * e / params.scalar_elems_per_s_per_sm
                params = dataclasses.replace(
                    params, unpipelined_latency_s=params.unpipelined_latency_s + extra)
            return orig_s(hw, params, **kw)

        an.estimate_time = patched_s
        return
    if candidate == "l1_carveout":
        patch("address", value)  # reads value[0][0]
        l1_seen: dict[str, Any] = {}
        access, smem, orig_e = an.matmul_access, an.matmul_smem_bytes, an.estimate_time

        def access_l1(*a: Any, **kw: Any) -> Any:
            l1_seen["acc"] = access(*a, **kw)
            return l1_seen["acc"]

        def smem_l1(*a: Any, **kw: Any) -> Any:
            l1_seen["smem"] = smem(*a, **kw)
            return l1_seen["smem"]

        def patched_e(hw: Any, params: Any, **kw: Any) -> Any:
            e, (_, eta, ref_kb) = kw.get("scalar_step_elems", 0.0), value[0]
            if e > 0 and eta > 0 and not l1_seen["acc"].b.is_async:
                need_kb = kw["blocks_per_sm"] * (l1_seen["smem"] + 1024) / 1024
                l1_kb = 256 - min(c for c in CARVEOUTS_KB if c >= need_kb)
                kw["scalar_step_elems"] = e / min(1.0, l1_kb / ref_kb) ** eta
            return orig_e(hw, params, **kw)

        an.matmul_access, an.matmul_smem_bytes, an.estimate_time = access_l1, smem_l1, patched_e
        return
    if candidate == "serial_tensor":
        patch("address", value)  # reads value[0][0]
        orig_t = an.estimate_time

        def patched_t(hw: Any, params: Any, **kw: Any) -> Any:
            e, f = kw.get("scalar_step_elems", 0.0), value[0][1]
            if e > 0 and f > 0:
                steps = max(kw["n_steps_per_program"], 1)
                peak = hw.tensor_flops_per_s(kw.get("dtype", "float16")) / hw.n_sms
                t = kw["flops_per_program"] / steps / (peak * f)
                kw["scalar_step_elems"] = e + t * params.scalar_elems_per_s_per_sm
            return orig_t(hw, params, **kw)

        an.estimate_time = patched_t
        return
    if candidate == "address_once":
        return  # the library's scalar_b_extra_regs and cap (term_params), no patch
    if candidate == "address":
        regs = an.matmul_scalar_regs_per_thread

        def regs_w(bm: int, bn: int, nw: int, p: Any, **kw: Any) -> int:
            r = regs(bm, bn, nw, p, **kw)
            x = value[0] if isinstance(value[0], float) else value[0][0]
            if x > 0 and kw.get("scalar_b_elems", 0) > 0:
                extra = math.ceil(x * kw["scalar_b_elems"] / (32 * nw))
                r = max(r, min(r + extra, 255))
            return r

        an.matmul_scalar_regs_per_thread = regs_w
        return
    orig = an.estimate_time

    def patched(hw: Any, params: Any, **kw: Any) -> Any:
        e = kw.get("scalar_step_elems", 0.0)
        if e > 0 and value[0] > 0 and math.isfinite(params.scalar_elems_per_s_per_sm):
            if candidate == "share":  # L_u + c**gam e / R == (L_u + (c**gam - 1) e / R) + e / R
                c = min(kw["blocks_per_sm"], -(-kw["n_programs"] // hw.n_sms))
                extra = (c ** value[0] - 1.0) * e / params.scalar_elems_per_s_per_sm
                params = dataclasses.replace(
                    params, unpipelined_latency_s=params.unpipelined_latency_s + extra)
            else:
                kw["scalar_step_elems"] = e + value[0]
        return orig(hw, params, **kw)

    an.estimate_time = patched


def term_params(candidate: str, v: Any, params: Any) -> Any:
    """``params`` with ``address_once``'s term ``v`` (0 or ``(x_B, cap)``); others unchanged.

    Parameters
    ----------
    candidate : str
        A key of :data:`GRIDS`.
    v
        The grid's first coordinate.
    params : GpuModelParams
        The model before session 13 (``scalar_b_extra_regs = 0``).

    Returns
    -------
    GpuModelParams
        ``params`` with ``scalar_b_extra_regs = x_B`` and ``scalar_b_address_regs_cap =
        cap`` for ``address_once`` and ``v != 0``, else ``params``.
    """
    if candidate != "address_once" or not isinstance(v, tuple):
        return params
    return dataclasses.replace(params, scalar_b_extra_regs=v[0], scalar_b_address_regs_cap=v[1])


def model_blocks_per_sm(shape: str, cfg: tuple[int, ...], params: Any) -> int:
    """Programs an SM of eq. 3 in the (patched) matmul model; 0 where it is infeasible.

    Parameters
    ----------
    shape : str
        ``"MxNxK:dtype"``.
    cfg : tuple of int
        ``(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)``.
    params : GpuModelParams

    Returns
    -------
    int
        The model's resident programs per SM (``blocks_per_sm``), 0 if infeasible.
    """
    from autotile.measure import KernelModelMeasurer
    from autotile.measure.gpu import H200_MEASURED_L2

    dims, dtype = shape.split(":")
    M, N, K = (int(v) for v in dims.split("x"))
    m = KernelModelMeasurer("matmul", {"M": M, "N": N, "K": K}, H200_MEASURED_L2,
                            params=params, dtype=dtype)
    bm, bn, bk, g, s, w = cfg
    r = m.measure(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w,
                       num_stages=s))
    return int(r.metrics["blocks_per_sm"]) if r.ok else 0


def residency_agreement(candidate: str, xs: tuple[Any, ...]) -> int:
    """Programs an SM of eq. 3 against the compiled ones, per value of the candidate's term.

    For each (shape, tutorial config) of :data:`DIAG_RUNS` that compiled, the compiled
    residency (``diag_matmul_regs.model_occupancy`` of ``n_regs`` and ``shared_bytes``)
    is compared with the patched model's, counted over the pairs the shipped model ranks
    (feasible: 70 and 30, the denominators of ``diag_matmul_regs.py --part report``).
    Compile facts only, no timing: the candidate's term may be chosen on them.

    Parameters
    ----------
    candidate : str
        A key of :data:`GRIDS` whose first grid coordinate is the term (``address``,
        ``address_once``).
    xs : tuple
        Values of the term (``address_once``: a float ``x_B`` or a pair ``(x_B, cap)``);
        0 is the shipped model.

    Returns
    -------
    int
        0.
    """
    import csv

    from benchmarks.h200.diag_matmul_regs import model_occupancy

    base = before_after_v7(scalar_b_extra_regs=0.0)  # the model before session 13
    rows = []
    for run in DIAG_RUNS:
        with (DATA / run / "diag_matmul_regs.csv").open() as f:
            rows += [(run, r) for r in csv.DictReader(f)
                     if r["source"] == "tutorial" and r["n_regs"]]
    value: list[Any] = [0.0]
    patch(candidate, value)
    models: dict[Any, list[int]] = {}
    for x in (0.0,) + tuple(v for v in xs if v != 0.0):
        value[0] = x
        models[x] = []
        for _, r in rows:
            cfg = tuple(int(v) for v in re.findall(r"\d+", r["config"]))
            bm, bn, bk, g, w, s = cfg  # "BMxBNxBK Gg ww ss"
            models[x].append(model_blocks_per_sm(r["shape"], (bm, bn, bk, g, s, w),
                                                 term_params(candidate, x, base)))
    compiled = [model_occupancy(int(r["n_regs"]), int(r["shared_bytes"]),
                                int(r["config"].split(" w")[1].split()[0]))[0]
                for _, r in rows]
    for x, got in models.items():
        parts = []
        for run in DIAG_RUNS:
            idx = [i for i, (rn, _) in enumerate(rows) if rn == run and models[0.0][i] > 0]
            parts.append(f"{run}: {sum(got[i] == compiled[i] for i in idx)} of {len(idx)}")
        print(f"{candidate} x = {x}: programs an SM agree with the compiled ones on "
              + ", ".join(parts))
        for i, (run, r) in enumerate(rows):
            if models[0.0][i] > 0 and got[i] != compiled[i]:
                print(f"    {r['shape']} {r['config']}: compiled {r['n_regs']} regs, "
                      f"{compiled[i]} programs; model {got[i]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from autotile.measure import GpuModelParams

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", choices=tuple(GRIDS), default="share")
    ap.add_argument("--fix-rate", action="store_true",
                    help="keep R and L_u at the shipped values (grid over the term only)")
    ap.add_argument("--on", action="store_true",
                    help="select only grid points with the term on (the shipped model is "
                         "still scored for comparison)")
    ap.add_argument("--residency", type=str, default=None, metavar="X[:CAP],...",
                    help="print the compiled-residency agreement of the candidate's term at "
                         "these values (address; address_once with an optional cap, "
                         "address registers a thread) and exit")
    args = ap.parse_args(argv)
    if args.residency is not None:
        xs = [tuple(float(u) for u in v.split(":")) for v in args.residency.split(",")]
        return residency_agreement(args.candidate, tuple(x[0] if len(x) == 1 else x
                                                         for x in xs))
    d = GpuModelParams()
    shipped = (GRIDS[args.candidate][0][0], d.scalar_elems_per_s_per_sm,
               d.unpipelined_latency_s)
    grid = GRIDS[args.candidate]
    if args.fix_rate:
        grid = [g for g in grid if g[1] == d.scalar_elems_per_s_per_sm
                and g[2] == d.unpipelined_latency_s]
    if args.on:
        grid = [g for g in grid if g[0] != shipped[0]]
    value: list[Any] = [shipped[0]]
    patch(args.candidate, value)
    meas = measured()
    old = list(meas)
    meas.update(read_summary(DATA / "autotune_gpu_v6" / "autotune_gpu_summary.csv"))
    bsc = [s for s in meas if int(s.split(":")[0].split("x")[1]) % 16]
    # every shape with a scalar operand (B, or A: K % 16 != 0) is rescored: share,
    # overhead and serial_tensor act on any eq. 5d launch
    varied = [s for s in meas if any(int(v) % 16 for v in s.split(":")[0].split("x")[1:])]
    # the model before session 13 (B's address registers off): every candidate is scored
    # against it; address_once's (1, 16) is the shipped model since session 13
    base = before_after_v7(scalar_b_extra_regs=0.0)
    const = {s: score(model_times(s, base), meas[s]) for s in meas if s not in varied}
    sc: dict[tuple[Any, float, float], dict[str, tuple[float, float, float]]] = {}
    for g in ([shipped] if shipped not in grid else []) + grid:
        value[0] = g[0]
        p = dataclasses.replace(term_params(args.candidate, g[0], base),
                                scalar_elems_per_s_per_sm=g[1], unpipelined_latency_s=g[2])
        sc[g] = {s: score(model_times(s, p), meas[s]) for s in varied} | const
        print(f"{g[0]}, R {g[1]:.0e}, L_u {g[2] * 1e6:.2f} us: in-sample picks "
              + ", ".join(f"{sc[g][s][0]:.1f}" for s in bsc))
    print("B-scalar shapes in that order:", ", ".join(bsc))

    v6 = list(read_summary(DATA / "autotune_gpu_v6" / "autotune_gpu_summary.csv"))
    for label, pool in (("34 shapes before v6", old), ("42 shapes with v6", list(meas)),
                        ("leave-one-B-scalar-shape-out", bsc)):
        held = {h: max(grid, key=lambda j: loso_criterion(sc, j, [s for s in pool if s != h]))
                for h in pool}
        p = [sc[held[h]][h][0] for h in pool]
        q = [sc[shipped][h][0] for h in pool]
        print(f"{label}: held out {sum(v >= 90 for v in p)} of {len(p)} >= 90%, median "
              f"{statistics.median(p):.1f}%, min {min(p):.1f}% (shipped model "
              f"{sum(v >= 90 for v in q)} of {len(q)}, median {statistics.median(q):.1f}%, "
              f"min {min(q):.1f}%)")
        for h in pool:  # the B-scalar shapes, and any other whose pick changed
            if h in bsc or abs(sc[held[h]][h][0] - sc[shipped][h][0]) > 0.05:
                print(f"    {h}: selected {held[h]}, pick {sc[held[h]][h][0]:.1f}% (shipped "
                      f"{sc[shipped][h][0]:.1f}%)")
        if label.startswith("42"):
            p6 = [sc[held[h]][h][0] for h in v6]
            print(f"  the 8 shapes of v6, held out: {sum(v >= 90 for v in p6)} of 8 >= 90%, "
                  + ", ".join(f"{h} {sc[held[h]][h][0]:.1f}% (shipped {sc[shipped][h][0]:.1f}%)"
                              for h in v6))
            lost = [h for h in pool if sc[shipped][h][0] >= 90 > sc[held[h]][h][0]]
            print(f"  shapes >= 90% with the shipped model that fall below 90% held out: "
                  f"{', '.join(lost) if lost else 'none'}")
        k = max(grid, key=lambda j: loso_criterion(sc, j, pool))
        p = [sc[k][h][0] for h in pool]
        print(f"  in-sample, selected on all {len(pool)}: {k}: {sum(v >= 90 for v in p)} of "
              f"{len(p)} >= 90%, median {statistics.median(p):.1f}%, min {min(p):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
