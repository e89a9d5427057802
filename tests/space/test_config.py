from __future__ import annotations

import json
import pickle

import pytest

from autotile.errors import InvalidConfigError
from autotile.space import Config, gemm_space


def test_mapping_and_hash():
    a = Config({"i_factor": 16, "order": ["io", "ii"]})
    b = Config(order=("io", "ii"), i_factor=16)
    assert a == b and hash(a) == hash(b)
    assert a["order"] == ("io", "ii")
    assert dict(a) == {"i_factor": 16, "order": ("io", "ii")}
    assert a.to_dict() == {"i_factor": 16, "order": ("io", "ii")}
    assert len({a, b}) == 1
    assert a != {"i_factor": 16, "order": ("io", "ii")}
    with pytest.raises(AttributeError):
        a.x = 1  # frozen
    assert pickle.loads(pickle.dumps(a)) == a


def test_text_form_and_parse():
    space = gemm_space()
    cfg = space.validate(
        {
            "i_factor": 16,
            "j_factor": 16,
            "k_factor": 4,
            "order": ("io", "jo", "ko", "ki", "ii", "ji"),
        }
    )
    text = "i_factor=16, j_factor=16, k_factor=4, order=(io,jo,ko,ki,ii,ji)"
    assert str(cfg) == text
    assert repr(cfg) == f"Config({text})"
    assert Config.from_str(space, text) == cfg
    assert space.parse(text) == cfg
    assert (
        space.parse("order=(io, jo, ko, ki, ii, ji), k_factor=4, j_factor=16, i_factor=16") == cfg
    )
    with pytest.raises(InvalidConfigError, match="i_factor=5 is not a divisor of 64"):
        space.parse("i_factor=5, j_factor=16, k_factor=4, order=(io,jo,ko,ki,ii,ji)")
    with pytest.raises(InvalidConfigError, match="unknown knob 'x'"):
        space.parse("x=5, j_factor=16, k_factor=4, order=(io,jo,ko,ki,ii,ji)")
    with pytest.raises(InvalidConfigError, match="expected 'name=value'"):
        space.parse("i_factor 16")
    with pytest.raises(InvalidConfigError, match="i_factor=sixteen is not an integer"):
        space.parse("i_factor=sixteen")


def test_replace_and_json():
    space = gemm_space()
    cfg = space.config_at(1234)
    new = cfg.replace(i_factor=64)
    assert new["i_factor"] == 64 and new["order"] == cfg["order"] and cfg["i_factor"] != 64
    assert list(new) == list(space.names)
    with pytest.raises(InvalidConfigError, match="unknown knob 'nope'"):
        cfg.replace(nope=1)
    text = cfg.to_json()
    assert json.loads(text)["order"] == list(cfg["order"])
    assert Config.from_json(text) == cfg
    assert space.validate(Config.from_json(json.loads(text))) == cfg
    with pytest.raises(InvalidConfigError, match="must be an object"):
        Config.from_json("[1, 2]")


def test_bad_config_values():
    with pytest.raises(InvalidConfigError, match="hashable"):
        Config({"a": {"x": 1}})
    with pytest.raises(InvalidConfigError, match="knob names must be str"):
        Config({1: 2})
