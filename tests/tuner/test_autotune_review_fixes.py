"""``@autotune`` fixes from the fresh-user review: scorer-keyed disk cache, the docstring
example, Triton's GROUP_M=8 on small M, and a grid that ignores its META argument."""

from __future__ import annotations

import doctest
import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import autotile.lang as tl
import autotile.tuner._decorator as decorator_module
from autotile.errors import MeasureError
from autotile.kernels import matmul_kernel
from autotile.measure import matmul_space
from autotile.tuner import Config, autotune
from autotile.tuner._disk_cache import scorer_hash
from autotile.tuner._library import KernelModelScorer
from tests.tuner._kernels import double_kernel, grid_1d

N = 96
CONFIGS = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64)]


def _exec_scorer(body: str, name: str = "my_scorer"):
    """Define ``name`` from source via exec (inspect cannot read its source)."""
    ns: dict = {}
    exec(textwrap.dedent(body), ns)  # noqa: S102 - test input
    return ns[name]


SMALL = """
def my_scorer(config, args):
    return float(config.kwargs["BLOCK"])
"""
LARGE = """
def my_scorer(config, args):
    return 1.0 / config.kwargs["BLOCK"]
"""


# -- scorer hash ----------------------------------------------------------------------
def test_scorer_hash_changes_with_the_code_not_the_name():
    small, large = _exec_scorer(SMALL), _exec_scorer(LARGE)
    assert small.__qualname__ == large.__qualname__ == "my_scorer"
    assert scorer_hash(small) != scorer_hash(large)
    assert scorer_hash(small) == scorer_hash(_exec_scorer(SMALL))  # same code, same key
    # Two lambdas differing only in a constant.
    assert scorer_hash(lambda c, a: 1.0) != scorer_hash(lambda c, a: 2.0)


def test_scorer_hash_of_closures_partials_and_objects():
    def make(scale):
        def scorer(config, args):
            return scale / config.kwargs["BLOCK"]
        return scorer

    assert scorer_hash(make(1.0)) == scorer_hash(make(1.0))
    assert scorer_hash(make(1.0)) != scorer_hash(make(2.0))

    def base(config, args, power):
        return config.kwargs["BLOCK"] ** power

    assert scorer_hash(functools.partial(base, power=1)) != scorer_hash(
        functools.partial(base, power=-1))

    obj_src = """
    class Scorer:
        def __call__(self, config, args):
            return {expr}
    """
    a = _exec_scorer(obj_src.format(expr="1.0"), "Scorer")()
    b = _exec_scorer(obj_src.format(expr="2.0"), "Scorer")()
    assert type(a).__qualname__ == type(b).__qualname__
    assert scorer_hash(a) != scorer_hash(b)
    assert scorer_hash(KernelModelScorer("matmul")) == scorer_hash(KernelModelScorer("matmul"))


def test_edited_scorer_retunes_instead_of_reusing_the_disk_cache():
    def launch(scorer):
        k = autotune(CONFIGS, key=["n"], scorer=scorer)(double_kernel)
        x, out = np.arange(N, dtype=np.float32), np.zeros(N, np.float32)
        k[grid_1d](x, out, N)
        return k.cache_source, k.best_config.kwargs["BLOCK"]

    assert launch(_exec_scorer(SMALL)) == ("tuned", 16)
    assert launch(_exec_scorer(LARGE)) == ("tuned", 64)  # same qualname, new code
    assert launch(_exec_scorer(SMALL)) == ("disk", 16)


PROCESS_SCRIPT = '''
import numpy as np
from autotile.tuner import Config, autotune
from tests.tuner._kernels import double_kernel, grid_1d


def my_scorer(cfg, args):
    return {body}


k = autotune([Config({{"BLOCK": b, "TAIL": "mask"}}) for b in (16, 32, 64)], key=["n"],
             scorer=my_scorer)(double_kernel)
x, out = np.arange(96, dtype=np.float32), np.zeros(96, np.float32)
k[grid_1d](x, out, 96)
print(k.cache_source, k.best_config.kwargs["BLOCK"])
'''


def test_scorer_edited_between_two_processes_retunes(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "AUTOTILE_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    script = tmp_path / "tune.py"

    def run(body: str) -> str:
        script.write_text(PROCESS_SCRIPT.format(body=body))
        r = subprocess.run([sys.executable, str(script)], env=env, cwd=root,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert run('float(cfg.kwargs["BLOCK"])') == "tuned 16"
    assert run('float(cfg.kwargs["BLOCK"])') == "disk 16"
    assert run('1.0 / cfg.kwargs["BLOCK"]') == "tuned 64"


# -- docstring example ----------------------------------------------------------------
def test_autotune_docstring_example_runs():
    result = doctest.testmod(decorator_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


# -- GROUP_M larger than the tile rows -------------------------------------------------
def _mm_args(M):
    a = np.ones((M, M), np.float16)
    return {"M": M, "N": M, "K": M, "a_ptr": a, "b_ptr": a, "c_ptr": a}


@pytest.mark.parametrize("M, block_m, group_m, same_as", [
    (256, 64, 8, 4),    # 4 tile rows: GROUP_M=8 is the column-major order, as GROUP_M=4
    (512, 128, 64, 4),
    (192, 64, 8, 4),    # 3 tile rows: GROUP_M >= 3 are all the same; the space keeps 4
    (256, 128, 2, 2),   # GROUP_M equal to the tile rows: unchanged
])
def test_group_m_beyond_the_tile_rows_is_feasible(M, block_m, group_m, same_as):
    scorer = KernelModelScorer("matmul")
    cfg = {"BLOCK_M": block_m, "BLOCK_N": 64, "BLOCK_K": 32, "PID_ORDER": "grouped"}
    big = scorer(Config({**cfg, "GROUP_M": group_m}, num_warps=4), _mm_args(M))
    ref = scorer(Config({**cfg, "GROUP_M": same_as}, num_warps=4), _mm_args(M))
    assert big.status == ref.status == "ok", big.error
    assert big.metrics == ref.metrics


def test_matmul_space_keeps_one_column_major_group():
    assert len(matmul_space(8192, 8192, 8192)) == 7091  # the shipped truth table's space
    sp = matmul_space(192, 192, 192)  # 3 tile rows at BLOCK_M=64
    groups = {c["GROUP_M"] for c in sp if c["BLOCK_M"] == 64}
    assert groups == {1, 2, 4}


# -- a grid that ignores META ---------------------------------------------------------
def _mm_call(grid, M=256):
    mm = autotune(configs=[
        Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8,
                "PID_ORDER": "grouped"}, num_warps=4),
        Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                "PID_ORDER": "grouped"}, num_warps=8),
    ], key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    a = np.ones((M, M), np.float16)
    c = np.zeros((M, M), np.float16)
    mm[grid(M)](a, a, c, M, M, M, M, 1, M, 1, M, 1)
    return mm, c


def test_closure_grid_gets_a_clear_reason():
    def closure_grid(M):
        N = M
        return lambda meta: (tl.cdiv(M, meta["BLOCK_M"]) * tl.cdiv(N, meta["BLOCK_N"]),)

    with pytest.raises(MeasureError) as info:
        _mm_call(closure_grid, M=512)
    msg = str(info.value)
    assert msg.count("the grid callable must compute the grid from its META argument (got a "
                     "grid for the full problem while checking a small instance)") == 2
    for n_programs in (64, 16):
        assert f"it returned ({n_programs},) both for the real call and for the check " \
               f"instance (a_ptr (72, 56), b_ptr (56, 40), c_ptr (72, 40))" in msg
    assert "OutOfBoundsError" in msg


def test_meta_grid_passes_the_check():
    def meta_grid(M):
        return lambda meta: (tl.cdiv(meta["M"], meta["BLOCK_M"]) *
                             tl.cdiv(meta["N"], meta["BLOCK_N"]),)

    mm, c = _mm_call(meta_grid)
    assert [r.status for r in mm.history] == ["ok", "ok"]
    assert (c == 256).all()


def test_fixed_tuple_grid_with_small_args_gets_a_clear_reason():
    n_small = 16

    def small(args):
        return {"x_ptr": np.arange(n_small, dtype=np.float32),
                "out_ptr": np.zeros(n_small, np.float32), "n": n_small}

    k = autotune([Config({"BLOCK": 16, "TAIL": "none"}), Config({"BLOCK": 32, "TAIL": "none"})],
                 key=["n"], scorer=lambda c, a: 1.0, small_args=small,
                 disk_cache=False)(double_kernel)
    x, out = np.arange(N, dtype=np.float32), np.zeros(N, np.float32)
    with pytest.raises(MeasureError, match=r"the grid \(6,\) is a fixed tuple for the full "
                                           r"problem; pass a callable grid"):
        k[(6,)](x, out, N)
