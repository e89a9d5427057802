"""A simple, documented CPU cost model for a simulated loop nest.

The model turns exact cache counts into an estimated cycle count::

    est_cycles = n_iters * body_cycles
               + n_loop_steps * loop_cycles
               + (misses - compulsory) * l2_cycles
               + compulsory * dram_cycles

Assumptions (all of them; nothing else is modelled):

* One iteration of the innermost body (one multiply-add and its three L1
  accesses) issues in ``body_cycles`` when every access hits.
* Every loop step (increment, compare, branch) of every loop level costs
  ``loop_cycles``; ``n_loop_steps = sum_l prod(extent[0..l])``, so short inner
  loops cost more (the reason compilers unroll them).
* A miss in the simulated L1 that is not compulsory is served by L2 (the
  whole working set of a 64x64 GEMM, 48 KB, fits in a 256 KB+ L2) and
  stalls for ``l2_cycles``; a compulsory miss comes from DRAM and stalls for
  ``dram_cycles``. Misses do not overlap (no memory-level parallelism).

Constants (defaults) are Skylake-class latencies: L1 load-to-use 4-5 cycles,
L2 14 cycles, DRAM about 200 cycles at 3 GHz (Intel 64 and IA-32 Architectures
Optimization Reference Manual, Table 2-6 "Cache parameters of the Skylake
microarchitecture"; AMAT model from Hennessy & Patterson, 6th ed., B.2).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["CpuCostModel"]


@dataclass(frozen=True)
class CpuCostModel:
    """Estimated cycles of a loop nest from its cache counts.

    Parameters
    ----------
    body_cycles : float, default=1.0
        Cycles per innermost iteration when all accesses hit L1.
    loop_cycles : float, default=1.0
        Cycles per step of any loop level.
    l2_cycles : float, default=14.0
        Stall cycles of a non-compulsory L1 miss (served by L2).
    dram_cycles : float, default=200.0
        Stall cycles of a compulsory miss (served by DRAM).

    Raises
    ------
    ValueError
        If a constant is negative or not finite.
    """

    body_cycles: float = 1.0
    loop_cycles: float = 1.0
    l2_cycles: float = 14.0
    dram_cycles: float = 200.0

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{k} must be finite and >= 0, got {k}={v!r}")

    @staticmethod
    def n_loop_steps(extents: tuple[int, ...]) -> int:
        """``sum_l prod(extents[0..l])``: steps taken by all loop levels together."""
        total, prod = 0, 1
        for e in extents:
            prod *= int(e)
            total += prod
        return total

    def cycles(self, extents: tuple[int, ...], n_misses: int, n_compulsory: int) -> float:
        """Estimated cycles of a nest with these loop extents and miss counts.

        Parameters
        ----------
        extents : tuple of int
            Loop extents, outer to inner.
        n_misses : int
            Set-associative L1 misses.
        n_compulsory : int
            Compulsory (first-touch) misses, ``<= n_misses``.

        Returns
        -------
        float
            Cycles.
        """
        n_iters = int(np.prod(extents, dtype=np.int64)) if extents else 1
        return (n_iters * self.body_cycles + self.n_loop_steps(extents) * self.loop_cycles
                + (n_misses - n_compulsory) * self.l2_cycles + n_compulsory * self.dram_cycles)

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (inverse: ``CpuCostModel(**d)``)."""
        return asdict(self)
