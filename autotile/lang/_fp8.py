"""8-bit float formats: decoding, rounding (nearest even) and saturation.

Each Triton fp8 type is a :class:`Fp8Format`: a sign bit, ``ebits`` exponent
bits with exponent ``bias`` and ``mbits`` mantissa bits, plus the format's
special codes.  All 256 codes are decoded once into a table; encoding
rounds to the nearest code, ties to the code with an even mantissa, like
the GPU's ``cvt.rn``.  Values beyond the largest finite value (infinities
included) saturate to it, as Triton's conversions do (``cvt.rn.satfinite``
on NVIDIA GPUs); NaN stays NaN where the format has one.

============  ===  ===  ====  ===========  =====================================
Triton name   E    M    bias  max finite   special codes
============  ===  ===  ====  ===========  =====================================
float8e5      5    2    15    57344        inf 0x7C, NaN 0x7D-0x7F (IEEE-like)
float8e4nv    4    3    7     448          NaN 0x7F, no inf (OCP E4M3FN)
float8e4b15   4    3    15    1.875        none: NaN encodes as +-max
float8e5b16   5    2    16    57344        NaN 0x80, no inf, no -0 (FNUZ)
float8e4b8    4    3    8     240          NaN 0x80, no inf, no -0 (FNUZ)
============  ===  ===  ====  ===========  =====================================

Triton's own reference decoder (``convert_float_to_float32`` in
``test_core.py``) treats 0x7F/0xFF of ``float8e4b15`` as NaN, as for
``float8e4nv``; so does this module.

References
----------
OCP 8-bit Floating Point Specification (OFP8), rev. 1.0, 2023; Triton
``python/triton/language/core.py`` (fp8 dtypes) and the PTX ISA, ``cvt``
(``.satfinite``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Fp8Format", "FORMATS"]


class Fp8Format:
    """One 8-bit float format.

    Parameters
    ----------
    name : str
        Triton's dtype name, e.g. ``"float8e4nv"``.
    ebits, mbits : int
        Exponent and mantissa bits (``1 + ebits + mbits == 8``).
    bias : int
        Exponent bias.
    ieee : bool
        Whether the all-ones exponent encodes inf (mantissa 0) and NaN
        (otherwise), as in IEEE 754.
    nan_codes : tuple of int
        Codes that decode to NaN in a non-IEEE format (both signs); NaN
        encodes as 0x7F (0x80 for FNUZ).
    fnuz : bool, default=False
        Whether ``0x80`` is the only NaN and there is no negative zero.
    """

    def __init__(self, name: str, ebits: int, mbits: int, bias: int, ieee: bool,
                 nan_codes: tuple[int, ...] = (), fnuz: bool = False):
        self.name = name
        self.ebits, self.mbits, self.bias = ebits, mbits, bias
        codes = np.arange(256, dtype=np.int64)
        sign = np.where(codes & 0x80, -1.0, 1.0)
        e = (codes >> mbits) & ((1 << ebits) - 1)
        m = codes & ((1 << mbits) - 1)
        mag = np.where(e == 0, m / 2.0**mbits * 2.0**(1 - bias),
                       (1 + m / 2.0**mbits) * 2.0**(e - bias))
        table = sign * mag
        if ieee:
            top = e == (1 << ebits) - 1
            table = np.where(top & (m == 0), sign * np.inf, table)
            table = np.where(top & (m != 0), np.nan, table)
        for c in nan_codes:
            table[c] = np.nan
        if fnuz:
            table[0x80] = np.nan
        self.table = table  # float64, code -> value
        self.nan_code = 0x80 if fnuz else 0x7F
        self.fnuz = fnuz
        pos = table[:128]
        finite = np.isfinite(pos)
        self._pos_codes = codes[:128][finite]
        order = np.argsort(pos[finite], kind="stable")
        self._pos_codes = self._pos_codes[order]
        self._pos_vals = pos[finite][order]
        self.max = float(self._pos_vals[-1])

    def __repr__(self) -> str:
        return f"Fp8Format({self.name}, e{self.ebits}m{self.mbits}, bias={self.bias})"

    def decode(self, raw: Any) -> npt.NDArray[np.float32]:
        """Values (float32, exact) of raw codes (uint8)."""
        a = np.asarray(raw)
        return self.table.astype(np.float32)[a.astype(np.uint8)].reshape(a.shape)

    def encode(self, x: Any) -> npt.NDArray[np.uint8]:
        """Raw codes of values: nearest (ties to even), saturating, NaN to NaN.

        Parameters
        ----------
        x : array-like
            Values of any real dtype (float16/32/64 or ints).

        Returns
        -------
        ndarray of uint8
            Same shape.
        """
        v = np.asarray(x, dtype=np.float64)
        mag = np.abs(v)
        vals, codes = self._pos_vals, self._pos_codes
        hi = np.clip(np.searchsorted(vals, mag, side="left"), 0, vals.size - 1)
        lo = np.clip(hi - 1, 0, vals.size - 1)
        d_lo = mag - vals[lo]
        d_hi = vals[hi] - mag
        take_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
        idx = np.where(take_hi, hi, lo)
        idx = np.where(mag >= vals[-1], vals.size - 1, idx)  # saturate (inf too)
        out = codes[idx].astype(np.uint8)
        neg = np.signbit(v)
        if self.fnuz:
            neg &= out != 0  # no negative zero
        out = np.where(neg, out | np.uint8(0x80), out).astype(np.uint8)
        nan = np.isnan(v)
        if nan.any():
            out = np.where(nan, np.uint8(self.nan_code), out).astype(np.uint8)
        return np.asarray(out.reshape(v.shape), dtype=np.uint8)

    def round(self, x: Any) -> npt.NDArray[np.float32]:
        """Values rounded to this format, returned as float32."""
        return self.decode(self.encode(x))


#: Triton's fp8 dtype name -> format.
FORMATS = {
    "float8e5": Fp8Format("float8e5", 5, 2, 15, ieee=True),
    "float8e4nv": Fp8Format("float8e4nv", 4, 3, 7, ieee=False, nan_codes=(0x7F, 0xFF)),
    "float8e4b15": Fp8Format("float8e4b15", 4, 3, 15, ieee=False, nan_codes=(0x7F, 0xFF)),
    "float8e5b16": Fp8Format("float8e5b16", 5, 2, 16, ieee=False, fnuz=True),
    "float8e4b8": Fp8Format("float8e4b8", 4, 3, 8, ieee=False, fnuz=True),
}
