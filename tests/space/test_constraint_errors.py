"""A constraint that raises or returns a non-bool is an error naming it and the config."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import ConstraintError, InvalidConfigError
from autotile.space import Constraint, PowerOfTwo, Space


def _space(*constraints):
    return Space([PowerOfTwo("BLOCK_M", 16, 64), PowerOfTwo("BLOCK_N", 16, 32)], constraints)


def test_a_raising_constraint_names_itself_and_the_config_and_chains_the_error():
    def fits(c):
        return c["BLOCKM"] * c["BLOCK_N"] <= 1024  # typo: no knob BLOCKM

    space = _space(fits)
    with pytest.raises(ConstraintError) as info:
        len(space)
    assert str(info.value) == ("constraint 'fits' raised KeyError: 'BLOCKM' on config "
                               "BLOCK_M=16, BLOCK_N=16")
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(ConstraintError, match="constraint 'fits' raised KeyError: 'BLOCKM' on "
                                              "config BLOCK_M=32, BLOCK_N=16"):
        space.is_valid({"BLOCK_M": 32, "BLOCK_N": 16})


@pytest.mark.parametrize("value, shown", [(None, "NoneType None"), (1, "int 1"),
                                          ("yes", "str 'yes'"), (np.int64(0), "int64 0")])
def test_a_constraint_must_return_a_bool(value, shown):
    space = _space(lambda c: value)
    with pytest.raises(ConstraintError) as info:
        space.validate({"BLOCK_M": 16, "BLOCK_N": 32})
    assert str(info.value) == (f"constraint 'constraint_0' must return a bool, got {shown} "
                               f"for config BLOCK_M=16, BLOCK_N=32")
    assert isinstance(info.value, TypeError) and not isinstance(info.value, InvalidConfigError)
    with pytest.raises(ConstraintError, match="must return a bool"):
        len(space)  # counting does not silently reject every config


def test_numpy_bools_are_bools():
    space = _space(lambda c: np.bool_(c["BLOCK_M"] <= c["BLOCK_N"]))
    assert len(space) == 3


def test_vectorized_constraint_errors_name_it():
    def boom(cols):
        return cols["nope"] > 0

    space = _space(Constraint("boom", boom, vectorized=True))
    with pytest.raises(ConstraintError, match=r"vectorized constraint 'boom' raised KeyError: "
                                              r"'nope' on the columns of 6 configs"):
        len(space)
    ints = _space(Constraint("ints", lambda cols: cols["BLOCK_M"] // 16, vectorized=True))
    with pytest.raises(ConstraintError, match=r"vectorized constraint 'ints' must return bools "
                                              r"\(a bool array of shape \(6,\) or a bool\), "
                                              r"got an int64 array of shape \(6,\)"):
        len(ints)
    ok = _space(Constraint("le", lambda cols: cols["BLOCK_M"] <= cols["BLOCK_N"],
                           vectorized=True))
    assert len(ok) == 3 and ok.is_valid({"BLOCK_M": 16, "BLOCK_N": 16})


def test_a_study_stops_on_a_broken_constraint_instead_of_rejecting_every_config():
    from autotile.measure import Measurer, MeasureResult
    from autotile.search import tune

    space = _space(lambda c: None)

    class M(Measurer):
        metrics = ("t",)
        objective = "t"

        def _measure(self, config):
            return MeasureResult(str(config), "ok", {"t": 1.0})

    with pytest.raises(ConstraintError, match="constraint 'constraint_0' must return a bool"):
        tune(space, M(), searcher="random", budget=3, seed=0, storage=":memory:",
             progress=False)
