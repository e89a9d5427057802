import json

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.space import Config as SpaceConfig
from autotile.tuner import Config


def test_str_all_kwargs_and_hash_like_triton():
    cfg = Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=4)
    assert str(cfg) == "BLOCK_M: 128, BLOCK_N: 64, num_warps: 8, num_stages: 4"
    assert cfg.all_kwargs() == {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8,
                                "num_ctas": 1, "num_stages": 4}
    same = Config({"BLOCK_N": 64, "BLOCK_M": np.int64(128)}, num_warps=8, num_stages=4)
    assert cfg == same and hash(cfg) == hash(same)
    assert len({cfg, same, Config({"BLOCK_M": 128, "BLOCK_N": 64})}) == 2
    hook = lambda kw: None  # noqa: E731
    assert Config({"B": 1}, pre_hook=hook) != Config({"B": 1})


def test_json_round_trip_and_from_knobs():
    cfg = Config({"BLOCK": 32, "ORDER": (1, 0), "TAIL": "mask"}, num_warps=2, num_stages=1)
    back = Config.from_json(cfg.to_json())
    assert back == cfg and json.loads(cfg.to_json())["kwargs"]["ORDER"] == [1, 0]
    knobs = SpaceConfig({"BLOCK": 32, "num_warps": 2, "num_stages": 5})
    c = Config.from_knobs(knobs)
    assert dict(c.kwargs) == {"BLOCK": 32} and (c.num_warps, c.num_stages) == (2, 5)


@pytest.mark.parametrize("kwargs, opts, match", [
    ({"BLOCK": 32}, {"num_warps": 3}, "num_warps must be a positive power of two"),
    ({"BLOCK": 32}, {"num_stages": 0}, "num_stages must be an int >= 1"),
    ({"num_warps": 4}, {}, "num_warps is a launch option"),
    ({1: 2}, {}, "keys must be str"),
    ({"B": {1: 2}}, {}, "must be hashable"),
])
def test_invalid_configs_name_the_rule(kwargs, opts, match):
    with pytest.raises(InvalidConfigError, match=match):
        Config(kwargs, **opts)


@pytest.mark.parametrize("maxnreg", [-1, 0, 2.5, "64", True])
def test_bad_maxnreg_is_refused_naming_it(maxnreg):
    # session 13: maxnreg=-1 was accepted and passed on to the launch
    with pytest.raises(InvalidConfigError) as exc:
        Config({"BLOCK": 32}, maxnreg=maxnreg)
    assert str(exc.value) == ("maxnreg must be None or an int >= 1 (registers per thread), "
                              f"got maxnreg={maxnreg!r}")


def test_maxnreg_numpy_int_is_a_plain_int_and_round_trips():
    cfg = Config({"BLOCK": 32}, maxnreg=np.int64(128))
    assert cfg.maxnreg == 128 and type(cfg.maxnreg) is int
    assert Config.from_json(cfg.to_json()) == cfg
    assert Config({"BLOCK": 32}).maxnreg is None


def test_config_is_frozen():
    cfg = Config({"BLOCK": 16})
    with pytest.raises(AttributeError):
        cfg.num_warps = 8  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.kwargs["BLOCK"] = 32  # type: ignore[index]
