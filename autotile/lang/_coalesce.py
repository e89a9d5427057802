"""A warp-level memory-coalescing model (the "gpusim" of lecture 3, seed §6.2).

A :class:`ThreadLayout` says, for every load instruction and every thread
of a block, which elements the thread accesses (``vec`` contiguous elements
per thread form one vector access).  :func:`coalesce` groups threads into
warps of 32 and counts, per warp instruction (one *request*), the distinct
32-byte sectors it touches: each sector is one memory *transaction*.

The seed's example: a 1024-element float32 block on 4 warps (128 threads,
8 elements per thread, 4096 bytes):

============================== ======== ============= ======= ==========
layout                         requests sectors/req   sectors efficiency
============================== ======== ============= ======= ==========
(a) 8 contiguous per thread,   8        32            256     50 %
    two 16 B vectors
(b) coalesced + vectorised:    8        16            128     100 %
    adjacent threads, adjacent
    16 B, twice
(c) coalesced scalar: one      32       4             128     100 %
    element, 8 instructions
============================== ======== ============= ======= ==========

(a) In one instruction thread ``t`` reads bytes ``[32t, 32t + 16)``: the 32
threads of a warp span 1024 bytes, i.e. 32 sectors, each only half used --
twice the necessary traffic.  (b) A warp instruction reads 32 x 16 = 512
contiguous bytes = 16 fully used sectors.  (c) A warp instruction reads
32 x 4 = 128 contiguous bytes = 4 full sectors.  (b) and (c) both move the
minimum 4096 / 32 = 128 sectors, but (b) needs 4x fewer requests (8 vs
32), so it is the cheapest: fewest transactions, then fewest requests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from autotile.errors import LangError

__all__ = ["ThreadLayout", "CoalesceReport", "coalesce", "layout_contiguous_per_thread",
           "layout_coalesced_vector", "layout_coalesced_scalar"]


@dataclass(frozen=True, eq=False)
class ThreadLayout:
    """Which elements each thread accesses in each load instruction.

    Attributes
    ----------
    name : str
        Label.
    elem_idx : ndarray of int64, shape (n_instructions, n_threads, vec)
        Element index accessed by thread ``t`` in instruction ``i``, lane
        ``k`` of its vector (``vec`` contiguous elements = one vector access).
    """

    name: str
    elem_idx: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        if self.elem_idx.ndim != 3:
            raise LangError(f"elem_idx must have shape (n_instructions, n_threads, vec), got "
                            f"shape {self.elem_idx.shape}")

    @property
    def n_instructions(self) -> int:
        """Load instructions per thread."""
        return int(self.elem_idx.shape[0])

    @property
    def n_threads(self) -> int:
        """Threads in the block."""
        return int(self.elem_idx.shape[1])

    @property
    def vec_elems(self) -> int:
        """Vector width in elements."""
        return int(self.elem_idx.shape[2])


@dataclass(frozen=True)
class CoalesceReport:
    """Transaction counts of one layout.

    Attributes
    ----------
    layout : str
        Layout name.
    n_requests : int
        Warp memory instructions issued (instructions x warps).
    sectors_per_request : tuple of int
        Distinct 32 B sectors of each request (instruction-major, then warp).
    n_sectors : int
        Total sector transactions.
    bytes_used : int
        Bytes the threads asked for.
    bytes_moved : int
        ``n_sectors * sector_bytes``.
    """

    layout: str
    n_requests: int
    sectors_per_request: tuple[int, ...]
    n_sectors: int
    bytes_used: int
    bytes_moved: int

    @property
    def n_transactions(self) -> int:
        """Memory transactions: one per sector (same as ``n_sectors``)."""
        return self.n_sectors

    @property
    def efficiency(self) -> float:
        """``bytes_used / bytes_moved``."""
        return self.bytes_used / self.bytes_moved if self.bytes_moved else 1.0

    @property
    def cost(self) -> tuple[int, int]:
        """Sort key: (transactions, requests); lower is better."""
        return (self.n_sectors, self.n_requests)


def coalesce(layout: ThreadLayout, elem_bytes: int = 4, warp_size: int = 32,
             sector_bytes: int = 32) -> CoalesceReport:
    """Count sector transactions of every warp instruction of ``layout``.

    Parameters
    ----------
    layout : ThreadLayout
        Thread-to-element map; ``n_threads`` must be a multiple of ``warp_size``.
    elem_bytes : int, default=4
        Element size in bytes.
    warp_size : int, default=32
        Threads per warp.
    sector_bytes : int, default=32
        Transaction granularity.

    Returns
    -------
    CoalesceReport
        Requests, sectors per request, totals and efficiency.

    Raises
    ------
    LangError
        If the thread count is not a multiple of ``warp_size``.
    """
    n_i, n_t, vec = layout.elem_idx.shape
    if n_t % warp_size:
        raise LangError(f"n_threads must be a multiple of warp_size={warp_size}, got {n_t}")
    n_w = n_t // warp_size
    sec = (layout.elem_idx.astype(np.int64) * elem_bytes) // sector_bytes
    last = (layout.elem_idx.astype(np.int64) * elem_bytes + elem_bytes - 1) // sector_bytes
    both = np.concatenate([sec, last], axis=2).reshape(n_i, n_w, warp_size * 2 * vec)
    s = np.sort(both, axis=2)
    per = 1 + np.count_nonzero(np.diff(s, axis=2), axis=2)  # (n_i, n_w)
    n_sec = int(per.sum())
    return CoalesceReport(layout.name, n_i * n_w, tuple(int(x) for x in per.reshape(-1)),
                          n_sec, n_i * n_t * vec * elem_bytes, n_sec * sector_bytes)


def layout_contiguous_per_thread(n_elems: int = 1024, n_threads: int = 128,
                                 vec_elems: int = 4) -> ThreadLayout:
    """Layout (a): thread ``t`` owns ``[t*E, (t+1)*E)``, read in vectors of ``vec_elems``.

    ``E = n_elems // n_threads``; instruction ``j`` reads elements
    ``t*E + j*vec_elems + k``.
    """
    per = n_elems // n_threads
    j = np.arange(per // vec_elems)[:, None, None]
    t = np.arange(n_threads)[None, :, None]
    k = np.arange(vec_elems)[None, None, :]
    return ThreadLayout("contiguous_per_thread", (t * per + j * vec_elems + k).astype(np.int64))


def layout_coalesced_vector(n_elems: int = 1024, n_threads: int = 128,
                            vec_elems: int = 4) -> ThreadLayout:
    """Layout (b): instruction ``j``, thread ``t`` reads ``j*T*V + t*V + k`` (coalesced vectors)."""
    step = n_threads * vec_elems
    j = np.arange(n_elems // step)[:, None, None]
    t = np.arange(n_threads)[None, :, None]
    k = np.arange(vec_elems)[None, None, :]
    return ThreadLayout("coalesced_vector", (j * step + t * vec_elems + k).astype(np.int64))


def layout_coalesced_scalar(n_elems: int = 1024, n_threads: int = 128) -> ThreadLayout:
    """Layout (c): instruction ``j``, thread ``t`` reads element ``j*T + t``."""
    j = np.arange(n_elems // n_threads)[:, None, None]
    t = np.arange(n_threads)[None, :, None]
    return ThreadLayout("coalesced_scalar", (j * n_threads + t).astype(np.int64))
