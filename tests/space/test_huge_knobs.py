"""Knobs too large to list work lazily; listing them is refused with a clear error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.space import MAX_LISTED_VALUES, Constraint, IntRange, Permutation, PowerOfTwo, Space

BIG = IntRange("x", 0, 10**12)


def test_huge_int_range_works_without_listing_its_values():
    assert len(BIG) == 10**12 + 1
    assert 10**11 + 7 in BIG and 10**12 + 1 not in BIG
    assert BIG.index(123_456_789_012) == 123_456_789_012
    assert BIG.value_at(999_999_999_999) == 999_999_999_999
    assert BIG.neighbours(10**12) == [10**12 - 1]
    assert BIG.mutate(5, np.random.default_rng(0)) != 5
    assert BIG.encode(10**12) == [1e12]
    assert BIG.parse_value("42") == 42
    np.testing.assert_array_equal(BIG.values_at(np.array([0, 7, 10**12])), [0, 7, 10**12])
    stepped = IntRange("s", -5, 10**12, step=3)
    np.testing.assert_array_equal(stepped.values_at(np.array([0, 1, 2])), [-5, -2, 1])


def test_huge_int_range_space_samples_encodes_and_indexes():
    space = Space([BIG, PowerOfTwo("b", 1, 8)])
    assert space.size == 4 * (10**12 + 1)
    cfgs = space.sample(0, 5)
    assert len(set(cfgs)) == 5
    assert [space.config_at(space.index_of(c)) for c in cfgs] == cfgs
    x = space.encode(cfgs)
    assert x.shape == (5, 2) and x[:, 0].tolist() == [float(c["x"]) for c in cfgs]
    assert dict(space.config_at(space.size - 1)) == {"x": 10**12, "b": 8}


@pytest.mark.parametrize("what", ["values", "value_array"])
def test_listing_a_huge_int_range_is_refused_naming_the_knob_and_size(what):
    with pytest.raises(InvalidConfigError) as info:
        getattr(BIG, what) if what == "values" else BIG.value_array()
    assert str(info.value).startswith(
        f"IntRange knob 'x' has 1000000000001 values, too many to list (at most "
        f"{MAX_LISTED_VALUES})")
    assert not isinstance(info.value, MemoryError)


def test_listing_a_huge_permutation_is_refused():
    p = Permutation("order", tuple("abcdefghijklm"))  # 13! orderings
    assert len(p) == math.factorial(13)
    assert p.value_at(p.index(tuple("mlkjihgfedcba"))) == tuple("mlkjihgfedcba")
    with pytest.raises(InvalidConfigError, match=f"Permutation knob 'order' has "
                                                 f"{math.factorial(13)} values, too many"):
        p.values  # noqa: B018


def test_constrained_space_with_a_large_knob_counts_without_listing_it():
    # 2**25 values > MAX_LISTED_VALUES, but the product is small enough to enumerate
    big = IntRange("x", 0, 2**25 - 1)
    vec = Space([big], [Constraint("aligned", lambda c: c["x"] % 1024 == 0, vectorized=True)])
    assert vec.size == 2**15
    assert dict(vec.config_at(3)) == {"x": 3072}


def test_measurer_space_check_does_not_list_huge_knobs():
    from autotile.search._study_args import space_mismatch

    a = Space([BIG, PowerOfTwo("b", 1, 8)])
    b = Space([IntRange("x", 0, 10**12), PowerOfTwo("b", 1, 8)])
    assert space_mismatch(a, b) is None
    c = Space([IntRange("x", 0, 10**12 - 1), PowerOfTwo("b", 1, 8)])
    assert space_mismatch(a, c) == (
        "knob 'x' is IntRange with values range(0, 1000000000001) in the study's space "
        f"{a!r} but IntRange with values range(0, 1000000000000) in the measurer's space {c!r}")
