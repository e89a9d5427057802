"""autotile.space: knobs, spaces, configs and schedule templates.

A :class:`Space` is a tuple of knobs (:class:`Choice`, :class:`PowerOfTwo`,
:class:`Divisors`, :class:`IntRange`, :class:`Boolean`, :class:`Permutation`)
plus constraints; a :class:`Config` holds one value per knob. Searchers use
the bijection ``config_at``/``index_of``, ``sample``, ``neighbours``,
``mutate`` and ``crossover``; cost models use ``encode``.
:func:`gemm_space` is the GEMM schedule template (split factors and loop
order).
"""

from __future__ import annotations

from autotile.space._categorical import Boolean, Choice
from autotile.space._config import Config
from autotile.space._constraint import Constraint
from autotile.space._gemm import gemm_canonical_key, gemm_schedule, gemm_space
from autotile.space._knob import MAX_LISTED_VALUES, Knob, format_value
from autotile.space._numeric import Divisors, IntRange, PowerOfTwo, divisors
from autotile.space._permutation import Permutation, order_crossover
from autotile.space._space import Space

__all__ = [
    "Knob",
    "Choice",
    "PowerOfTwo",
    "Divisors",
    "IntRange",
    "Boolean",
    "Permutation",
    "Config",
    "Constraint",
    "Space",
    "gemm_space",
    "gemm_schedule",
    "gemm_canonical_key",
    "divisors",
    "format_value",
    "order_crossover",
    "MAX_LISTED_VALUES",
]
