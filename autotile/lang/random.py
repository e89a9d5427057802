"""``tl.random``: Triton's ``triton.language.random`` names (Philox random numbers).

The same functions as ``tl.rand``, ``tl.randint``, ... (defined in
:mod:`autotile.lang._random`), so ``tl.random.uint_to_uniform_float(x)`` in
a kernel written for Triton runs unchanged.
"""

from __future__ import annotations

from autotile.lang._random import (
    N_ROUNDS_DEFAULT,
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)

__all__ = ["N_ROUNDS_DEFAULT", "philox_impl", "philox", "randint", "randint4x",
           "uint_to_uniform_float", "rand", "rand4x", "pair_uniform_to_normal", "randn",
           "randn4x"]
