"""Bad input from the second new-user test: a config built from its text form."""

from __future__ import annotations

import pytest

from autotile.errors import InvalidConfigError
from autotile.space import Config


@pytest.mark.parametrize("value, shown", [("a=1", "str 'a=1'"), ([1, 2], "list [1, 2]"),
                                          (3, "int 3")])
def test_config_from_something_that_is_not_pairs_raises(value, shown):
    with pytest.raises(InvalidConfigError) as exc:
        Config(value)
    assert str(exc.value) == (
        f"Config takes a mapping of knob name to value or (name, value) pairs, got {shown}; "
        f"e.g. Config({{'BLOCK': 64}}) or Config(BLOCK=64) (a config's text form is not "
        f"parsed)")


def test_config_from_pairs_and_keywords_still_works():
    assert dict(Config([("a", 1)], b=[2, 3])) == {"a": 1, "b": (2, 3)}
