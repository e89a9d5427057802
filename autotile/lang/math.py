"""``tl.math``: the elementwise math builtins under Triton's ``triton.language.math`` names.

The same functions as ``tl.exp``, ``tl.fma``, ... (defined in
:mod:`autotile.lang._math`), so ``tl.math.div_rn(x, y)`` and
``tl.math.erf(x)`` in a kernel written for Triton run unchanged.
``libdevice`` (``triton.language.extra``) is not provided.
"""

from __future__ import annotations

from autotile.lang._math import (
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)

__all__ = ["umulhi", "exp", "exp2", "fma", "log", "log2", "cos", "rsqrt", "sin", "sqrt", "sqrt_rn",
           "abs", "fdiv", "div_rn", "erf", "floor", "ceil"]
