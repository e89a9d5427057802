"""Conformance suite over the kernel registry, in the style of scikit-learn's
``parametrize_with_checks``: every registered kernel is checked, with no literal
list of names, so a kernel added with one registry line is checked too."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

import autotile
from autotile.kernels import KERNELS, KernelSpec, as_float_array, relative_l2_error
from autotile.measure import H200, KernelModelMeasurer, triton_source
from autotile.space import Space

SPECS = list(KERNELS.values())
IDS = [s.name for s in SPECS]


def _some_configs(space: Space, n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    size = space.size
    idx = sorted(set(rng.integers(0, size, size=min(n, size)).tolist()))
    return [dict(space.config_at(int(i))) for i in idx]


def _shape(spec: KernelSpec, n: int) -> dict[str, int]:
    return {k: (64 if k == "d" else n) for k in spec.shape_names}


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_source_is_triton_valid(spec):
    """Each kernel a spec launches is a top-level function whose source parses
    unchanged under Triton's header."""
    args = spec.small_args(_shape(spec, 100))
    cfg = _some_configs(spec.space(spec.small_shape(_shape(spec, 100))), 1)[0]
    cfg.update(spec.model_knobs)
    kernels = {id(la.kernel): la.kernel
               for la in spec.launches(spec.small_shape(_shape(spec, 100)), None, cfg, args)}
    src = triton_source(list(kernels.values()))
    tree = ast.parse(src)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert names == {k.__name__ for k in kernels.values()}
    assert "autotile" not in src.split("\n\n\n", 1)[1]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("dtype_pick", ["default", "other"])
def test_interpreter_matches_reference(spec, dtype_pick):
    dtype = spec.default_dtype if dtype_pick == "default" else [
        d for d in spec.dtypes if d != spec.default_dtype][0]
    shape = spec.small_shape(_shape(spec, 100))
    for cfg in _some_configs(spec.space(shape, dtype), 2, seed=1):
        cfg.update(spec.model_knobs)
        args = spec.args(shape, dtype, seed=0)
        ref = spec.reference(args)
        spec.run(shape, dtype, cfg, args)
        for name, expected in ref.items():
            err = relative_l2_error(as_float_array(args[name]), expected)
            assert err <= spec.tolerance(dtype), (name, cfg, err)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_space_round_trips(spec):
    space = spec.space(_shape(spec, 512), hardware=H200)
    assert space.size > 0
    for cfg in _some_configs(space, 5):
        i = space.index_of(cfg)
        assert dict(space.config_at(i)) == cfg
        assert dict(space.parse(str(space.config_at(i)))) == cfg
    again = Space.from_json(space.to_json(), constraints=space.constraints)
    assert again.size == space.size


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_model_score_is_finite_or_infeasible_with_reason(spec):
    shape = _shape(spec, 1024)
    m = KernelModelMeasurer(spec, shape, H200)
    assert m.spec is spec
    n_ok = 0
    for cfg in _some_configs(m.space, 4, seed=2):
        r = m.measure(cfg)
        if r.ok:
            n_ok += 1
            assert math.isfinite(r.metrics["time_s"]) and r.metrics["time_s"] > 0
            assert r.metrics["hbm_bytes"] >= 0
        else:
            assert r.status == "infeasible" and r.error, r
    assert n_ok >= 1


def test_registry_names_match_spec_names():
    for name, spec in KERNELS.items():
        assert spec.name == name and isinstance(spec, KernelSpec)


def test_no_module_branches_on_a_kernel_name():
    """No module of autotile compares a name with a registered kernel's name."""
    root = Path(autotile.__file__).parent
    names = "|".join(re.escape(n) for n in KERNELS)
    pattern = re.compile(
        rf"""(==|!=|\bin\b)\s*\(?\s*["']({names})["']|["']({names})["']\s*(==|!=)|"""
        rf"""startswith\(\s*["'](matmul|softmax|flash)""")
    hits = []
    for path in sorted(root.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(root)}:{i}: {line.strip()}")
    assert hits == []
