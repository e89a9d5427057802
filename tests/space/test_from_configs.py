from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.errors import InvalidConfigError
from autotile.space import Choice, Permutation, PowerOfTwo, Space

KNOBS = (
    PowerOfTwo("block_size_x", 16, 256),
    PowerOfTwo("block_size_y", 1, 16),
    Choice("tile", (1, 2, 4)),
)


def cache_keys():
    """Valid set of a Kernel-Tuner-like cache: threads per block <= 512."""
    out = []
    for bx in (16, 32, 64, 128, 256):
        for by in (1, 2, 4, 8, 16):
            for t in (1, 2, 4):
                if bx * by <= 512 and not (t == 4 and by == 16):
                    out.append({"block_size_x": bx, "block_size_y": by, "tile": t})
    return out


SPACE = Space.from_configs(KNOBS, cache_keys() + cache_keys()[:5], name="kt")
N_VALID = len(cache_keys())


def test_size_and_order():
    # bx*by <= 512: 5+5+4+3+2 = 19 pairs, * 3 tiles, minus by=16 & tile=4 (bx 16, 32) = 55
    assert N_VALID == 55
    assert SPACE.size == len(SPACE) == 55
    assert SPACE.product_size == 5 * 5 * 3
    assert SPACE.is_explicit
    assert [c.to_dict() for c in SPACE] == cache_keys()  # mixed-radix order kept


def test_bijection_and_membership():
    for i in range(SPACE.size):
        assert SPACE.index_of(SPACE.config_at(i)) == i
    bad = {"block_size_x": 256, "block_size_y": 4, "tile": 1}
    assert not SPACE.is_valid(bad)
    with pytest.raises(InvalidConfigError) as exc:
        SPACE.validate(bad)
    assert str(exc.value) == (
        "config block_size_x=256, block_size_y=4, tile=1 is not one of the 55 configs of this space"
    )
    with pytest.raises(InvalidConfigError, match="block_size_x=48 is not a power of two"):
        Space.from_configs(KNOBS, [{"block_size_x": 48, "block_size_y": 1, "tile": 1}])


def test_sampling_and_neighbours_stay_inside():
    picks = SPACE.sample(3, n=55)
    assert len(set(picks)) == 55
    assert SPACE.sample(3, n=10) == SPACE.sample(3, n=10)
    cfg = SPACE.validate({"block_size_x": 256, "block_size_y": 2, "tile": 2})
    nb = SPACE.neighbours(cfg)
    assert {(c["block_size_x"], c["block_size_y"], c["tile"]) for c in nb} == {
        (128, 2, 2),
        (256, 1, 2),
        (256, 2, 1),
        (256, 2, 4),
    }


@settings(max_examples=50, deadline=None)
@given(st.integers(0, N_VALID - 1), st.integers(0, N_VALID - 1), st.integers(0, 2**32))
def test_moves_stay_inside(i, j, seed):
    rng = np.random.default_rng(seed)
    a, b = SPACE.config_at(i), SPACE.config_at(j)
    m = SPACE.mutate(a, rng)
    assert SPACE.is_valid(m) and m != a
    assert SPACE.is_valid(SPACE.crossover(a, b, rng))


def test_sparse_permutation_space_mutation_falls_back():
    knobs = (Permutation("o", ("a", "b", "c", "d", "e")),)
    members = [{"o": ("a", "b", "c", "d", "e")}, {"o": ("e", "d", "c", "b", "a")}]
    s = Space.from_configs(knobs, members)
    assert s.size == 2
    a, b = s.config_at(0), s.config_at(1)
    assert s.neighbours(a) == []
    assert s.mutate(a, 0) == b
    assert s.crossover(a, b, 0) in (a, b)


def test_json_roundtrip_keeps_members():
    back = Space.from_json(SPACE.to_json())
    assert back.is_explicit and back.size == 55 and back.name == "kt"
    assert list(back) == list(SPACE)
    assert json.loads(SPACE.to_json())["members"][:2] == [0, 1]
