from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.errors import InvalidConfigError
from autotile.space import (
    Boolean,
    Choice,
    Config,
    Constraint,
    Divisors,
    IntRange,
    Permutation,
    PowerOfTwo,
    Space,
    gemm_space,
)

GEMM = gemm_space()


def small_space(constraints=()):
    return Space([Divisors("a", 8), Boolean("b"), Permutation("p", ("x", "y", "z"))], constraints)


def constrained_gemm():
    return Space(
        GEMM.knobs, [Constraint("tile_fits", lambda c: c["i_factor"] * c["j_factor"] <= 256)]
    )


CGEMM = constrained_gemm()


def test_gemm_sizes():
    assert len(GEMM) == GEMM.size == GEMM.product_size == 7**3 * 720 == 246_960
    assert len(gemm_space(1024)) == 11**3 * 720 == 958_320
    assert GEMM.names == ("i_factor", "j_factor", "k_factor", "order")
    assert isinstance(GEMM["order"], Permutation)
    with pytest.raises(KeyError, match="unknown knob 'zz'"):
        GEMM["zz"]


def test_huge_unconstrained_space_counts_without_enumeration():
    s = Space([IntRange(f"x{i}", 0, 999) for i in range(10)])
    assert s.size == 1000**10
    cfg = s.config_at(1000**10 - 1)
    assert all(v == 999 for v in cfg.values())
    assert s.index_of(cfg) == 1000**10 - 1
    picks = s.sample(0, 5)
    assert len(set(picks)) == 5 and all(s.is_valid(c) for c in picks)


def test_enumeration_order_mixed_radix_last_fastest():
    s = small_space()
    cfgs = list(s)
    assert len(cfgs) == 4 * 2 * 6 == len(s)
    expected = [
        {"a": a, "b": b, "p": p}
        for a, b, p in itertools.product((1, 2, 4, 8), (False, True), itertools.permutations("xyz"))
    ]
    assert [c.to_dict() for c in cfgs] == expected
    assert [s.index_of(c) for c in cfgs] == list(range(len(s)))
    assert str(s.config_at(0)) == "a=1, b=False, p=(x,y,z)"
    assert str(s.config_at(7)) == "a=1, b=True, p=(x,z,y)"


@pytest.mark.parametrize(
    "space", [GEMM, CGEMM, gemm_space(1024)], ids=["gemm", "cgemm", "gemm1024"]
)
def test_bijection_random_and_ends(space):
    rng = np.random.default_rng(0)
    idx = [0, space.size - 1, *rng.integers(0, space.size, 200).tolist()]
    for i in idx:
        cfg = space.config_at(i)
        assert space.index_of(cfg) == i
        assert space.is_valid(cfg)
    assert space.config_at(0).to_dict() == {
        "i_factor": 1,
        "j_factor": 1,
        "k_factor": 1,
        "order": ("io", "ii", "jo", "ji", "ko", "ki"),
    }
    with pytest.raises(IndexError, match=f"0 <= index < {space.size}, got index={space.size}"):
        space.config_at(space.size)
    with pytest.raises(IndexError):
        space.config_at(-1)


def test_gemm_last_config():
    assert GEMM.config_at(GEMM.size - 1).to_dict() == {
        "i_factor": 64,
        "j_factor": 64,
        "k_factor": 64,
        "order": ("ki", "ko", "ji", "jo", "ii", "io"),
    }
    # index = ((i * 7 + j) * 7 + k) * 720 + rank(order)
    cfg = GEMM.validate(
        {
            "i_factor": 16,
            "j_factor": 2,
            "k_factor": 64,
            "order": ("io", "ii", "jo", "ji", "ki", "ko"),
        }
    )
    assert GEMM.index_of(cfg) == ((4 * 7 + 1) * 7 + 6) * 720 + 1


def test_constrained_count_by_hand():
    # i*j <= 256 with i, j in {2^0..2^6}: 49 pairs minus the 10 with a + b > 8.
    assert CGEMM.size == 39 * 7 * 720 == 196_560
    assert CGEMM.product_size == 246_960
    vec = Space(
        GEMM.knobs,
        [Constraint("tile_fits", lambda c: c["i_factor"] * c["j_factor"] <= 256, vectorized=True)],
    )
    assert vec.size == 196_560
    for i in (0, 1000, 196_559):
        assert vec.config_at(i) == CGEMM.config_at(i)

    # plain callables are accepted and named after the function
    def k_not_last(c):
        return c["order"][-1] not in ("ko", "ki")

    s = Space(GEMM.knobs, [k_not_last])
    assert s.size == 7**3 * (720 - 2 * 120)
    assert s.constraints[0].name == "k_not_last"
    assert Space(GEMM.knobs, [lambda c: True]).constraints[0].name == "constraint_0"


def test_permutation_constraint_on_small_space():
    s = small_space(
        [Constraint("x_first", lambda c: c["p"][0] == "x"), lambda c: c["a"] != 2 or c["b"]]
    )
    # 'x' first: 2 of 6 orders; (a == 2 and not b) removed: 4*2 - 1 = 7 (a, b) pairs
    assert s.size == 7 * 2
    assert all(c["p"][0] == "x" and (c["a"] != 2 or c["b"]) for c in s)


def test_counting_a_million_is_fast():
    import time

    s = Space(
        [
            Divisors("i", 1024),
            Divisors("j", 1024),
            Divisors("k", 1024),
            Permutation("o", tuple("abcdef")),
        ],
        [Constraint("small", lambda c: c["i"] * c["j"] * c["k"] <= 2**15)],
    )
    t0 = time.perf_counter()
    n = s.size
    assert time.perf_counter() - t0 < 8.0
    n_triples = sum(1 for a, b, c in itertools.product(range(11), repeat=3) if a + b + c <= 15)
    assert n == n_triples * 720


def valid_mapping():
    return {
        "i_factor": 16,
        "j_factor": 16,
        "k_factor": 4,
        "order": ["io", "jo", "ko", "ki", "ii", "ji"],
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"foo": 1}, "unknown knob 'foo' (knobs: i_factor, j_factor, k_factor, order)"),
        ({"i_factor": None}, "i_factor must be an int, got NoneType i_factor=None"),
        ({"i_factor": 5}, "i_factor=5 is not a divisor of 64"),
        ({"k_factor": 128}, "k_factor=128 is not a divisor of 64"),
        ({"j_factor": "16"}, "j_factor must be an int, got str j_factor='16'"),
        (
            {"order": ("io", "io", "jo", "ji", "ko", "ki")},
            "order=(io,io,jo,ji,ko,ki) is not a permutation of (io,ii,jo,ji,ko,ki)",
        ),
        ({"order": "io,ii,jo,ji,ko,ki"}, "order must be a tuple of (io,ii,jo,ji,ko,ki), got str"),
    ],
)
def test_validate_errors(change, message):
    m = valid_mapping()
    m.update(change)
    with pytest.raises(InvalidConfigError) as exc:
        GEMM.validate(m)
    assert message in str(exc.value)
    assert message in "; ".join(GEMM.violations(m))
    assert not GEMM.is_valid(m)
    assert isinstance(exc.value, ValueError)


def test_validate_missing_and_wrong_type():
    m = valid_mapping()
    del m["k_factor"]
    with pytest.raises(InvalidConfigError, match="missing knob 'k_factor'"):
        GEMM.validate(m)
    with pytest.raises(
        InvalidConfigError, match="config must be a mapping from knob name to value, got list"
    ):
        GEMM.validate([16, 16, 4])
    assert GEMM.violations(valid_mapping()) == []
    cfg = GEMM.validate(valid_mapping())
    assert isinstance(cfg, Config) and cfg["order"] == ("io", "jo", "ko", "ki", "ii", "ji")
    assert cfg in GEMM and valid_mapping() in GEMM


def test_violated_constraint_is_named():
    m = valid_mapping()
    m.update(i_factor=64, j_factor=64)
    with pytest.raises(InvalidConfigError) as exc:
        CGEMM.validate(m)
    assert str(exc.value) == (
        "constraint 'tile_fits' is violated by i_factor=64, j_factor=64, k_factor=4, "
        "order=(io,jo,ko,ki,ii,ji)"
    )
    assert GEMM.is_valid(m) and not CGEMM.is_valid(m)
    with pytest.raises(InvalidConfigError, match="tile_fits"):
        CGEMM.index_of(m)


def test_sampling_is_seeded_unique_and_valid():
    a = CGEMM.sample(42, n=50)
    b = CGEMM.sample(np.random.default_rng(42), n=50)
    assert a == b
    assert len(set(a)) == 50 and all(CGEMM.is_valid(c) for c in a)
    assert CGEMM.sample(43, n=50) != a
    s = small_space()
    everything = s.sample(0, n=len(s))
    assert len(set(everything)) == len(s) == 48
    with pytest.raises(
        InvalidConfigError, match="cannot sample n=49 distinct configs from a space of size 48"
    ):
        s.sample(0, n=49)
    assert len(s.sample(0, n=200, unique=False)) == 200


def test_sampling_uniform_chi_square():
    s = small_space([lambda c: c["a"] <= 4])  # 3 * 2 * 6 = 36 valid configs
    assert s.size == 36
    n = 36 * 200
    draws = s.sample(7, n=n, unique=False)
    counts = np.bincount([s.index_of(c) for c in draws], minlength=36)
    chi2 = float(((counts - 200.0) ** 2 / 200.0).sum())
    # df = 35: the 0.999 quantile is 66.6
    assert chi2 < 66.6
    assert counts.min() > 0


def test_neighbours_gemm():
    cfg = GEMM.validate(valid_mapping())
    nb = GEMM.neighbours(cfg)
    # 2 neighbours per factor knob (16 and 4 are interior) + 25 permutation moves
    assert len(nb) == 2 * 3 + 25 == len(set(nb))
    for c in nb:
        diff = [k for k in GEMM.names if c[k] != cfg[k]]
        assert len(diff) == 1
    edge = GEMM.config_at(0)
    assert len(GEMM.neighbours(edge)) == 3 + 25


def test_neighbours_respect_constraints():
    cfg = CGEMM.validate({**valid_mapping(), "i_factor": 16, "j_factor": 16})
    nb = CGEMM.neighbours(cfg)
    assert all(c["i_factor"] * c["j_factor"] <= 256 for c in nb)
    assert len(nb) == 2 * 3 + 25 - 2  # i=32 and j=32 are out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, CGEMM.size - 1), st.integers(0, CGEMM.size - 1), st.integers(0, 2**32))
def test_moves_only_yield_valid_configs(i, j, seed):
    rng = np.random.default_rng(seed)
    a, b = CGEMM.config_at(i), CGEMM.config_at(j)
    m = CGEMM.mutate(a, rng)
    assert CGEMM.is_valid(m) and m != a
    child = CGEMM.crossover(a, b, rng)
    assert CGEMM.is_valid(child)
    for k in CGEMM.names:
        if k != "order":
            assert child[k] in (a[k], b[k])
    assert sorted(child["order"]) == sorted(a["order"])
    assert all(CGEMM.is_valid(c) for c in CGEMM.neighbours(a))


def test_mutate_and_crossover_are_seeded():
    a, b = GEMM.config_at(10), GEMM.config_at(200_000)
    assert GEMM.mutate(a, 3) == GEMM.mutate(a, 3)
    assert GEMM.crossover(a, b, 5) == GEMM.crossover(a, b, 5)
    assert GEMM.crossover(a, a, 5) == a


def test_encode_shapes_and_values():
    cfgs = GEMM.sample(0, n=10)
    X = GEMM.encode(cfgs)
    assert X.shape == (10, 3 + 6) and X.dtype == np.float64
    assert len(GEMM.feature_names) == GEMM.n_features == 9
    cfg = GEMM.validate(valid_mapping())
    np.testing.assert_array_equal(GEMM.encode(cfg), [[4, 4, 2, 0, 4, 1, 5, 2, 3]])
    s = Space(
        [Choice("c", ("a", "b")), IntRange("r", 0, 4, step=2), PowerOfTwo("p", 1, 8), Boolean("u")]
    )
    X = s.encode([{"c": "b", "r": 4, "p": 8, "u": True}, {"c": "a", "r": 0, "p": 1, "u": False}])
    np.testing.assert_array_equal(X, [[0, 1, 4, 3, 1], [1, 0, 0, 0, 0]])
    assert s.feature_names == ["c=a", "c=b", "r", "p:log2", "u"]
    assert GEMM.encode([]).shape == (0, 9)


def test_space_json_roundtrip():
    text = GEMM.to_json()
    back = Space.from_json(text)
    assert back.knobs == GEMM.knobs and back.size == GEMM.size
    assert json.loads(CGEMM.to_json())["constraints"] == ["tile_fits"]
    with pytest.raises(InvalidConfigError, match="needs the constraints \\['tile_fits'\\]"):
        Space.from_json(CGEMM.to_json())
    again = Space.from_json(CGEMM.to_json(), CGEMM.constraints)
    assert again.size == CGEMM.size


def test_bad_spaces():
    with pytest.raises(InvalidConfigError, match="duplicate 'a'"):
        Space([Divisors("a", 4), Boolean("a")])
    with pytest.raises(InvalidConfigError, match="knobs must be Knob instances"):
        Space(["a"])
    with pytest.raises(InvalidConfigError, match="constraints must be Constraint or callable"):
        Space([Boolean("a")], [3])
    big = Space([IntRange("x", 0, 10**6), IntRange("y", 0, 10**6)], [lambda c: True])
    with pytest.raises(InvalidConfigError, match="product_size=1000002000001"):
        len(big)


@pytest.mark.parametrize("bad", [1.5, 1.0, "3", True, np.bool_(True), None, np.float64(2)])
def test_config_at_requires_an_int(bad):
    with pytest.raises(TypeError, match=r"config index must be an int, got index="):
        GEMM.config_at(bad)


def test_config_at_accepts_numpy_integers():
    assert GEMM.config_at(np.int64(3)) == GEMM.config_at(np.int32(3)) == GEMM.config_at(3)
    assert GEMM.config_at(np.uint8(1)) != GEMM.config_at(3)


def test_permutation_table_lookup_agrees_with_the_lehmer_code():
    from autotile.space import Permutation

    small = Permutation("order", ("a", "b", "c", "d"))
    for i, v in enumerate(small.values):
        assert small.index(v) == i and small.index(list(v)) == i and small.check(v) is None
    assert small.check(("a", "b", "c")) is not None            # too short
    assert small.check(("a", "b", "c", "c")) is not None       # repeated item
    assert small.check(("a", "b", ["c"], "d")) is not None     # unhashable item
    with pytest.raises(InvalidConfigError):
        small.index(("d", "c", "b", "x"))
    big = Permutation("order", tuple("abcdefghi"))              # 9 items: no table
    assert not big._small and small._small
    assert big.index(tuple("abcdefgih")) == 1


def test_configs_a_space_made_skip_the_recheck_and_others_do_not():
    import copy
    import pickle

    space = gemm_space(16)
    cfg = space.config_at(123)
    child = space.mutate(cfg, 0)
    assert space.index_of(child) == space.index_of(dict(child))
    assert space._check_knobs(cfg) == (list(cfg.values()), [])
    # the mark is the space's own: equal configs from elsewhere are checked in full
    for other in (pickle.loads(pickle.dumps(cfg)), copy.deepcopy(cfg), Config(dict(cfg))):
        assert other == cfg and getattr(other, "_checked_by", None) is None
        assert space.index_of(other) == 123
    bigger = gemm_space(32)
    foreign = bigger.config_at(len(bigger) - 1)       # i_factor 32 is not a divisor of 16
    with pytest.raises(InvalidConfigError, match="i_factor"):
        space.index_of(foreign)
    with pytest.raises(InvalidConfigError, match="i_factor"):
        space.mutate(foreign, 0)
