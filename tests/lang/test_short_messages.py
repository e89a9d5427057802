"""A kernel launched with a Python list names the parameter and cuts the value."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang._semantic import short_value


@tl.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_list_argument_names_the_parameter():
    y = np.zeros(1000, np.float32)
    with pytest.raises(LangError) as exc:
        copy_kernel[(8,)](list(range(1000)), y, 1000, BLOCK=128)
    msg = str(exc.value)
    assert msg == ("kernel 'copy_kernel': argument 'x_ptr' must be a NumPy array (a pointer), "
                   "a scalar or a tl.constexpr, got list of 1000 items [0, 1, 2, 3, 4, 5, ...]; "
                   "pass np.asarray(...) for a buffer")
    assert not y.any()
    x = np.arange(1000, dtype=np.float32)
    copy_kernel[(8,)](x, y, 1000, BLOCK=128)
    np.testing.assert_array_equal(y, x)


def test_unsupported_operand_message_is_cut():
    @tl.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, offs + tuple(range(500)))

    with pytest.raises(LangError) as exc:
        k[(1,)](np.zeros(4, np.int32), BLOCK=4)
    msg = str(exc.value)
    assert "unsupported operand for add: tuple of 500 items (0, 1, 2, 3, 4, 5, ...)" in msg
    assert "499" not in msg


def test_short_value():
    assert short_value(np.zeros((3, 4), np.float16)) == "ndarray of shape (3, 4), float16"
    assert short_value([1, 2]) == "list of 2 items [1, 2]"
    assert short_value("ab") == "'ab'"
    assert len(short_value("x" * 500)) == 60
