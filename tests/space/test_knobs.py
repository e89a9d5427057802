from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.space import Boolean, Choice, Divisors, IntRange, Knob, Permutation, PowerOfTwo

ALL_KNOBS = [
    Choice("kind", ("a", 3, (1, 2), None)),
    PowerOfTwo("BLOCK_M", 16, 128),
    Divisors("i_factor", 64),
    IntRange("stages", 1, 10, step=3),
    Boolean("unroll"),
    Permutation("order", ("x", "y", "z", "w")),
]


def test_values_and_len():
    assert PowerOfTwo("b", 16, 128).values == (16, 32, 64, 128)
    assert len(PowerOfTwo("b", 1, 1024)) == 11
    assert Divisors("f", 64).values == (1, 2, 4, 8, 16, 32, 64)
    assert Divisors("f", 12).values == (1, 2, 3, 4, 6, 12)
    assert Divisors("f", 1024).values == tuple(2**e for e in range(11))
    assert IntRange("r", 1, 10, step=3).values == (1, 4, 7, 10)
    assert IntRange("r", 0, 5).values == (0, 1, 2, 3, 4, 5)
    assert len(IntRange("r", 0, 10**12)) == 10**12 + 1
    assert Boolean("b").values == (False, True)
    p = Permutation("o", ("a", "b", "c"))
    assert p.values == tuple(itertools.permutations(("a", "b", "c")))
    assert len(Permutation("o", ("io", "ii", "jo", "ji", "ko", "ki"))) == 720


@pytest.mark.parametrize("knob", ALL_KNOBS, ids=lambda k: k.kind)
def test_index_value_at_roundtrip(knob):
    for i, v in enumerate(knob.values):
        assert knob.index(v) == i
        assert knob.value_at(i) == v
        assert v in knob
        assert len(knob.encode(v)) == knob.n_features == len(knob.feature_names)
        assert knob.parse_value(knob.format_value(v)) == v


@pytest.mark.parametrize("knob", ALL_KNOBS, ids=lambda k: k.kind)
def test_json_roundtrip(knob):
    text = knob.to_json()
    back = Knob.from_json(text)
    assert back == knob and type(back) is type(knob)
    assert Knob.from_json(json.loads(text)) == knob
    assert hash(back) == hash(knob)


def test_permutation_rank_matches_itertools_for_6():
    p = Permutation("order", ("io", "ii", "jo", "ji", "ko", "ki"))
    for i, v in enumerate(itertools.permutations(p.items)):
        assert p.index(v) == i
        assert p.value_at(i) == v


def test_encodings():
    assert Divisors("f", 64).encode(16) == [4.0]
    assert PowerOfTwo("b", 16, 128).encode(64) == [6.0]
    assert IntRange("r", 1, 10, step=3).encode(7) == [7.0]
    assert Boolean("b").encode(True) == [1.0]
    assert Choice("c", ("a", "b", "c")).encode("b") == [0.0, 1.0, 0.0]
    p = Permutation("o", ("io", "ii", "jo"))
    assert p.encode(("jo", "io", "ii")) == [1.0, 2.0, 0.0]
    assert p.feature_names == ["o:pos(io)", "o:pos(ii)", "o:pos(jo)"]


def test_neighbours():
    d = Divisors("f", 64)
    assert d.neighbours(1) == [2]
    assert d.neighbours(16) == [8, 32]
    assert d.neighbours(64) == [32]
    assert IntRange("r", 1, 10, step=3).neighbours(4) == [1, 7]
    assert Boolean("b").neighbours(False) == [True]
    assert Choice("c", ("a", "b", "c")).neighbours("b") == ["a", "c"]
    p = Permutation("o", ("a", "b", "c", "d"))
    nb = p.neighbours(("a", "b", "c", "d"))
    assert nb[:3] == [("b", "a", "c", "d"), ("a", "c", "b", "d"), ("a", "b", "d", "c")]
    assert len(nb) == len(set(nb)) == 9  # (n - 1) ** 2
    assert ("d", "a", "b", "c") in nb and ("b", "c", "d", "a") in nb
    six = Permutation("o", ("io", "ii", "jo", "ji", "ko", "ki"))
    assert len(six.neighbours(six.items)) == 25


def test_mutate_gives_other_value():
    rng = np.random.default_rng(0)
    for knob in ALL_KNOBS:
        for v in knob.values[:5]:
            w = knob.mutate(v, rng)
            assert w != v and w in knob


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: PowerOfTwo("b", 3, 16), "low must be a power of two, got low=3"),
        (lambda: PowerOfTwo("b", 32, 16), "low <= high must hold, but got (low=32, high=16)"),
        (lambda: Divisors("f", 0), "n must be a positive int, got n=0"),
        (lambda: IntRange("r", 0, 4, step=0), "step must be positive, got step=0"),
        (lambda: IntRange("r", 0, 4.5), "high must be an int, got high=4.5"),
        (lambda: Choice("c", ()), "needs at least one value"),
        (lambda: Choice("c", (1, 1)), "must be distinct"),
        (lambda: Choice("c", (1, True)), "must be distinct"),
        (lambda: Choice("c", ({"a": 1},)), "hashable and JSON-able"),
        (lambda: Choice("a", [float("nan"), 1.0, 2.0]),
         "Choice values must not be NaN (NaN != NaN, so no config could ever match it), "
         "got a=nan in values=(nan, 1.0, 2.0)"),
        (lambda: Choice("t", [(1, np.nan), (1, 2)]), "must not be NaN"),
        (lambda: Choice("a", [np.float64("nan"), 1.0]), "must not be NaN"),
        (lambda: Permutation("o", ("a", "a")), "items must be distinct"),
        (lambda: Permutation("o", "abc"), "items must be a tuple of str"),
        (lambda: Divisors("bad name", 4), "knob name must not contain"),
        (lambda: Divisors("", 4), "knob name must be a non-empty str"),
    ],
)
def test_bad_knobs(make, message):
    with pytest.raises(InvalidConfigError) as exc:
        make()
    assert message in str(exc.value)


@pytest.mark.parametrize(
    "knob, value, message",
    [
        (Divisors("i_factor", 64), 5, "i_factor=5 is not a divisor of 64"),
        (Divisors("i_factor", 64), "16", "i_factor must be an int, got str i_factor='16'"),
        (Divisors("i_factor", 64), True, "i_factor must be an int, got bool"),
        (Divisors("i_factor", 64), 16.0, "i_factor must be an int, got float"),
        (PowerOfTwo("BLOCK_M", 16, 128), 48, "BLOCK_M=48 is not a power of two in [16, 128]"),
        (PowerOfTwo("BLOCK_M", 16, 128), 256, "BLOCK_M=256 is not a power of two in [16, 128]"),
        (IntRange("s", 1, 10, step=3), 5, "s=5 is not in [1, 10] with step 3"),
        (Boolean("u"), 1, "u=1 is not a bool"),
        (Choice("c", ("a", "b")), "z", "c='z' is not one of ('a', 'b')"),
        (Choice("c", (1, 2)), True, "c=True (bool) is not one of (1, 2)"),
        (Choice("BLOCK_M", (16, 32, 64, 128, 256)), "128",
         "BLOCK_M='128' (str) is not one of (16, 32, 64, 128, 256)"),
        (Choice("c", ("1", "2")), 1, "c=1 (int) is not one of ('1', '2')"),
        (Choice("c", (1, 2.5)), 2.0, "c=2.0 is not one of (1, 2.5)"),
        (
            Permutation("order", ("io", "ii", "jo", "ji", "ko", "ki")),
            ("io", "io", "jo", "ji", "ko", "ki"),
            "order=(io,io,jo,ji,ko,ki) is not a permutation of (io,ii,jo,ji,ko,ki)",
        ),
        (Permutation("order", ("a", "b")), ("a",), "order=(a) is not a permutation of (a,b)"),
        (Permutation("order", ("a", "b")), "ab", "order must be a tuple of (a,b), got str"),
    ],
)
def test_bad_values(knob, value, message):
    assert value not in knob
    with pytest.raises(InvalidConfigError) as exc:
        knob.index(value)
    assert message in str(exc.value)


def test_numpy_scalars_are_canonicalised():
    d = Divisors("f", 64)
    v = d.validate(np.int64(8))
    assert v == 8 and type(v) is int
    assert Permutation("o", ("a", "b")).validate(["b", "a"]) == ("b", "a")
