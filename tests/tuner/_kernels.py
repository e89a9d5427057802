"""Tiny kernels whose knobs change correctness, accumulate or work in place."""

from __future__ import annotations

import autotile.lang as tl
from autotile.lang import jit


@jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, TAIL: tl.constexpr):
    """out = 2 * x. TAIL="mask" is right; "skip" forgets the last partial block
    (wrong result when BLOCK does not divide n); "none" loads unmasked (out of bounds)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if TAIL == "none":
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x * 2)
    else:
        if TAIL == "skip":
            mask = offs < (n // BLOCK) * BLOCK
        else:
            mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x * 2, mask=mask)


@jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[0] += sum(x) through one atomic_add per program (accumulates across launches)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = x (its knob BLOCK changes only the speed)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@jit
def inc_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """x += 1 in place."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def grid_1d(meta):
    """One program per BLOCK elements."""
    return (tl.cdiv(meta["n"], meta["BLOCK"]),)


def time_by_block(config, args):
    """A toy scorer: larger blocks are faster (seconds)."""
    return 1e-3 / config.kwargs["BLOCK"]
