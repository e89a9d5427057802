"""L2 replays of a records-model window at many shares of the L2, for refits only.

``benchmarks/h200/records_fit.py --part features`` installs :func:`window_curves`
as the records model's ``_WINDOW_HOOK``: each launch's cached features then also
hold the window's L2 replay at the shares :data:`CURVE_FRACTIONS` of the L2
(``l2_curve``), a staggered replay (``l2_curve_stagger``), the programs run
(``window``) and the distinct bytes read per program (``uniq_read_b``), so that
``--part shares`` can score L2-share rules without re-running the interpreter.
The model itself never uses them (docs/results/records_model.md, "Model v9").

Each curve row is ``[share, read bytes, write bytes, read hit rate]`` for the LRU
replay in which stores do not take L2 lines, then the same three with stores
taking lines (Hopper's L2 is write-back, allocate on write).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numba
import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure.gpu._hardware import HardwareProfile  # noqa: E402
from autotile.measure.gpu._l2sim import _touch, simulate_l2_stream  # noqa: E402
from autotile.measure.gpu._records_model import _SECTOR_BYTES  # noqa: E402

#: Shares of the L2 (fractions of ``l2_bytes``, ``2**(k/2)`` for k = -10..2) at
#: which the window is replayed.
CURVE_FRACTIONS: tuple[float, ...] = tuple(float(2.0 ** (k / 2)) for k in range(-10, 3))


@numba.njit(cache=True, nogil=True)
def _sim_alloc(ids, is_write, tb, cap):  # type: ignore[no-untyped-def]
    """LRU replay in which stores also take L2 lines (write-back, allocate on write).

    Returns ``[reads, read hits, read-miss bytes]``; a store is not a read.
    """
    n_t = tb.size
    prv = np.full(n_t, -1, np.int64)
    nxt = np.full(n_t, -1, np.int64)
    inc = np.zeros(n_t, np.bool_)
    st = np.array([-1, -1, 0], np.int64)
    out = np.zeros(3, np.int64)
    for i in range(ids.size):
        tile = ids[i]
        hit = _touch(tile, tb, cap, prv, nxt, inc, st)
        if is_write[i]:
            continue
        out[0] += 1
        if hit:
            out[1] += 1
        else:
            out[2] += tb[tile]
    return out


def _staggered_stream(tr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The window's sector trace in a staggered steady state, for the L2 replay.

    Program ``p`` runs its accesses (position ``u`` in ``[0, 1)``: its load group
    over its groups, one chain step each, as :func:`_load_groups` counts them) from
    time ``-phi_p``, then those of a next row (its addresses renamed) from
    ``1 - phi_p``, with ``phi_p`` the fractional part of ``p`` times the golden
    ratio (phases spread evenly). The accesses at times in ``[0, 1)`` (one
    program's worth per program) are the ones counted; the earlier ones warm the L2.

    Returns
    -------
    ids : ndarray of int64
        Sector index of each access, in replay order.
    is_write : ndarray of bool
    tile_bytes : ndarray of int64
        32 for every sector.
    n_warm : int
        Accesses before time 0 (not counted).
    """
    prog = np.asarray(tr.program, np.int64)
    op = np.asarray(tr.op, np.int64)
    key = (np.asarray(tr.buffer, np.int64) << 40) + (
        np.asarray(tr.offset_bytes, np.int64) // _SECTOR_BYTES)
    wr = np.asarray(tr.is_write, np.bool_)
    # a program's clock: its load groups (_load_groups' rule), each one chain step
    upk, first, inv_pk = np.unique(prog * (1 << 32) + op, return_index=True,
                                   return_inverse=True)
    p_of = (upk >> 32).tolist()
    b_of = np.asarray(tr.buffer, np.int64)[first].tolist()
    w_of = wr[first].tolist()
    grp = np.zeros(upk.size)
    n_grp = np.ones(upk.size)
    seen: set[int] = set()
    cur, g, start = -1, 0, 0
    for i in range(upk.size):
        if p_of[i] != cur:
            n_grp[start:i] = g + 1
            cur, g, seen, start = p_of[i], 0, set(), i
        if not w_of[i]:
            if seen and b_of[i] in seen:
                g, seen = g + 1, set()
            seen.add(b_of[i])
        grp[i] = g
    n_grp[start:] = g + 1
    u = (grp / n_grp)[inv_pk]
    phi = np.modf(prog * 0.6180339887498949)[0]
    t0 = u - phi
    nxt = u < phi
    t = np.concatenate([t0, 1.0 + t0[nxt]])
    k = np.concatenate([key, key[nxt] + (1 << 60)])
    w = np.concatenate([wr, wr[nxt]])
    pp = np.concatenate([prog, prog[nxt]])
    oo = np.concatenate([op, op[nxt]])
    order = np.lexsort((oo, pp, t))
    t, k, w = t[order], k[order], w[order]
    n_pre = int(np.searchsorted(t, 0.0, "left"))
    ids, inv = np.unique(k, return_inverse=True)
    return (inv.astype(np.int64), w, np.full(ids.size, _SECTOR_BYTES, np.int64), n_pre)


def _replay_staggered(stream: tuple[np.ndarray, np.ndarray, np.ndarray, int],
                      cap: int) -> tuple[float, float]:
    """Read-miss bytes and read hit rate of the counted part of a staggered stream.

    Stores take L2 lines (:func:`_sim_alloc`). ``cap`` in bytes.
    """
    inv, w, tb, n_pre = stream
    full = _sim_alloc(inv, w, tb, cap)
    pre = _sim_alloc(inv[:n_pre], w[:n_pre], tb, cap)
    n_r, hits, rb = (int(full[j] - pre[j]) for j in range(3))
    return float(rb), (hits / n_r if n_r else 0.0)


def _stagger_curve(tr: Any, hw: HardwareProfile, share: float, scale: float,
                   lockstep: list[list[float]]) -> list[list[float]]:
    """The staggered replay (:func:`_staggered_stream`) at each share (refits only).

    Returns ``[share, read bytes, write bytes (the lockstep's), read hit rate]``
    with stores not taking L2 lines, then the same three with stores taking lines,
    per share of :data:`CURVE_FRACTIONS`.
    """
    stream = _staggered_stream(tr)
    inv, w, tb, n_pre = stream
    out = []
    for frac, _, wb, *_ in lockstep:
        cap = max(int(hw.l2_bytes * frac * share), _SECTOR_BYTES)
        f1 = simulate_l2_stream(inv, w, tb, l2_bytes=cap)
        p1 = simulate_l2_stream(inv[:n_pre], w[:n_pre], tb, l2_bytes=cap)
        n_r, hits = f1.n_reads - p1.n_reads, f1.n_read_hits - p1.n_read_hits
        rb_a, h_a = _replay_staggered(stream, cap)
        out.append([frac, (f1.hbm_read_bytes - p1.hbm_read_bytes) * scale, wb,
                    hits / n_r if n_r else 0.0, rb_a * scale, wb, h_a])
    return out


def window_curves(*, tr: Any, order: np.ndarray, key: np.ndarray, inv: np.ndarray,
                  ids: np.ndarray, hw: HardwareProfile, W: int, scale: float,
                  share: float) -> dict[str, Any]:
    """The records model's window replayed at every share of :data:`CURVE_FRACTIONS`.

    Called by ``launch_features`` (its ``_WINDOW_HOOK``) with the window's
    sector trace ``tr``, its lockstep order, keys and dense sector ids, the
    window's share of the L2 and ``scale`` (programs of the launch per
    program of the window).

    Returns
    -------
    dict
        ``l2_curve`` and ``l2_curve_stagger`` (lists of rows, bytes scaled
        to the whole launch), ``window`` (programs run) and ``uniq_read_b``
        (distinct bytes read per program).
    """
    writes = np.asarray(tr.is_write)[order]
    tb = np.full(ids.size, _SECTOR_BYTES, np.int64)
    curve = []
    for frac in CURVE_FRACTIONS:
        cap = max(int(hw.l2_bytes * frac * share), _SECTOR_BYTES)
        st = simulate_l2_stream(inv.astype(np.int64), writes, tb, l2_bytes=cap)
        al = _sim_alloc(inv.astype(np.int64), writes, tb, cap)
        curve.append([frac, st.hbm_read_bytes * scale, st.hbm_write_bytes * scale,
                      st.l2_hit_rate, al[2] * scale, st.hbm_write_bytes * scale,
                      al[1] / al[0] if al[0] else 0.0])
    return {"l2_curve": curve,
            "l2_curve_stagger": _stagger_curve(tr, hw, share, scale, curve),
            "window": float(W),
            "uniq_read_b": float(np.unique(key[~writes]).size) * _SECTOR_BYTES / W}
