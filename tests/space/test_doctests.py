from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "autotile.space._numeric",
    "autotile.space._categorical",
    "autotile.space._permutation",
    "autotile.space._config",
    "autotile.space._space",
    "autotile.space._gemm",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
