"""Eq. 5d changes for launches with B scalar, tried after v6 and in session 12 (CPU; none shipped).

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

Leave-one-shape-out over the 34 shapes with timings before v6 and over the 42 with v6
(criterion: mean pick fraction plus mean Spearman, as in ``zero_shot_loso.py``), and
leave-one-B-scalar-shape-out (the criterion on the other B-scalar shapes only); each pool
also prints the grid point selected on all of it (in-sample). Shapes with a scalar
operand (N or K not a multiple of 16) are rescored at every grid point, the others once
(before session 12 only B-scalar shapes were rescored, although share, overhead and
serial_tensor also act on the three shapes with only A scalar).

Run ``python benchmarks/h200/zero_shot_scalar_b.py --candidate C [--fix-rate]`` with C one
of share, overhead, address, serial_tensor, l1_carveout, share_address, share_linear
(about 5-40 s each; share_address about 3 min).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.zero_shot import DATA, read_summary  # noqa: E402
from benchmarks.h200.zero_shot_loso import (  # noqa: E402
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
}

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
    if candidate == "address":
        seen: dict[str, Any] = {}
        access, smem, regs = an.matmul_access, an.matmul_smem_bytes, an.matmul_regs_per_thread

        def access_w(*a: Any, **kw: Any) -> Any:
            seen["acc"] = access(*a, **kw)
            return seen["acc"]

        def smem_w(bm: int, bn: int, bk: int, *a: Any, **kw: Any) -> Any:
            seen["bk"] = bk
            return smem(bm, bn, bk, *a, **kw)

        def regs_w(bm: int, bn: int, nw: int, p: Any, staged_elems: float = 0) -> int:
            r = regs(bm, bn, nw, p, staged_elems=staged_elems)
            x = value[0] if isinstance(value[0], float) else value[0][0]
            if x > 0 and not seen["acc"].b.is_async:
                extra = math.ceil(x * seen["bk"] * bn / (32 * nw))
                r = max(r, min(r + extra, 255))
            return r

        an.matmul_access, an.matmul_smem_bytes = access_w, smem_w
        an.matmul_regs_per_thread = regs_w
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


def main(argv: list[str] | None = None) -> int:
    from autotile.measure import GpuModelParams

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", choices=tuple(GRIDS), default="share")
    ap.add_argument("--fix-rate", action="store_true",
                    help="keep R and L_u at the shipped values (grid over the term only)")
    args = ap.parse_args(argv)
    grid = GRIDS[args.candidate]
    if args.fix_rate:
        d = GpuModelParams()
        grid = [g for g in grid if g[1] == d.scalar_elems_per_s_per_sm
                and g[2] == d.unpipelined_latency_s]
    value: list[Any] = [grid[0][0]]  # the shipped model
    patch(args.candidate, value)
    meas = measured()
    old = list(meas)
    meas.update(read_summary(DATA / "autotune_gpu_v6" / "autotune_gpu_summary.csv"))
    bsc = [s for s in meas if int(s.split(":")[0].split("x")[1]) % 16]
    # every shape with a scalar operand (B, or A: K % 16 != 0) is rescored: share,
    # overhead and serial_tensor act on any eq. 5d launch
    varied = [s for s in meas if any(int(v) % 16 for v in s.split(":")[0].split("x")[1:])]
    base = GpuModelParams()
    const = {s: score(model_times(s, base), meas[s]) for s in meas if s not in varied}
    sc: dict[tuple[Any, float, float], dict[str, tuple[float, float, float]]] = {}
    for g in grid:
        value[0] = g[0]
        p = dataclasses.replace(base, scalar_elems_per_s_per_sm=g[1], unpipelined_latency_s=g[2])
        sc[g] = {s: score(model_times(s, p), meas[s]) for s in varied} | const
        print(f"{g[0]}, R {g[1]:.0e}, L_u {g[2] * 1e6:.2f} us: in-sample picks "
              + ", ".join(f"{sc[g][s][0]:.1f}" for s in bsc))
    print("B-scalar shapes in that order:", ", ".join(bsc))

    shipped = (grid[0][0], base.scalar_elems_per_s_per_sm, base.unpipelined_latency_s)
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
        k = max(grid, key=lambda j: loso_criterion(sc, j, pool))
        p = [sc[k][h][0] for h in pool]
        print(f"  in-sample, selected on all {len(pool)}: {k}: {sum(v >= 90 for v in p)} of "
              f"{len(p)} >= 90%, median {statistics.median(p):.1f}%, min {min(p):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
