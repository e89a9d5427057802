"""A study refuses to resume with a measurer whose settings differ from its creator's."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import optuna
import pytest

from autotile.measure import (
    H200,
    CacheConfig,
    GpuModelParams,
    KernelModelMeasurer,
    Measurer,
    MeasureResult,
    ReplayMeasurer,
    ScheduleMeasurer,
)
from autotile.measure._fingerprint import jsonable
from autotile.measure._ground_truth import GroundTruth, _numbers_settings
from autotile.search import create_study, tune
from autotile.space import gemm_space

SHAPE = {"M": 64, "N": 64, "K": 64}


def _kmm(**params: Any) -> KernelModelMeasurer:
    return KernelModelMeasurer("matmul", SHAPE, hardware=H200,
                               params=GpuModelParams(**params))


def _storage(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'studies.db'}"


def test_equal_settings_give_equal_fingerprints_and_any_change_another():
    a, b = _kmm(), _kmm()
    assert a is not b and a.fingerprint() == b.fingerprint()
    assert len(a.fingerprint()) == 16
    changed = [
        _kmm(power_cap_s_per_byte=1e-9),
        KernelModelMeasurer("matmul", SHAPE, hardware=dataclasses.replace(H200, l2_bytes=1 << 20)),
        KernelModelMeasurer("matmul", {"M": 64, "N": 64, "K": 128}, hardware=H200),
        KernelModelMeasurer("matmul", SHAPE, hardware=H200, max_probe_programs=16),
    ]
    prints = {m.fingerprint() for m in changed} | {a.fingerprint()}
    assert len(prints) == len(changed) + 1
    settings = a.settings()
    assert jsonable(settings)["hardware"]["l2_bytes"] == H200.l2_bytes
    assert jsonable(settings)["params"]["power_cap_s_per_byte"] == 0.0


def test_resume_with_other_model_params_is_refused_and_names_the_field(tmp_path):
    a, b = _kmm(), _kmm(power_cap_s_per_byte=1e-9)
    first = tune(a.space, a, "random", budget=3, seed=0, storage=_storage(tmp_path),
                 progress=False)
    assert first.optuna_study.user_attrs["autotile:measurer_fingerprint"] == a.fingerprint()
    with pytest.raises(ValueError, match=r"another measurer: settings\.params\."
                       r"power_cap_s_per_byte: 0\.0 \(then\) vs 1e-09 \(now\).*study_name"):
        tune(b.space, b, "random", budget=4, seed=0, storage=_storage(tmp_path), progress=False)
    # the same settings in a new measurer object resume the study
    again = tune(a.space, _kmm(), "random", budget=4, seed=0, storage=_storage(tmp_path),
                 progress=False)
    assert len(again.optuna_study.trials) == 4
    # another study name measures with the new settings
    other = tune(b.space, b, "random", budget=3, seed=0, storage=_storage(tmp_path),
                 progress=False, study_name="b")
    assert len(other.optuna_study.trials) == 3


def test_resume_with_another_cache_is_refused(tmp_path):
    space = gemm_space(8)
    tune(space, ScheduleMeasurer(space), "random", budget=3, seed=0,
         storage=_storage(tmp_path), progress=False)
    with pytest.raises(ValueError, match=r"settings\.cache.*size_bytes"):
        tune(space, ScheduleMeasurer(space, cache=CacheConfig(size_bytes=32768)), "random",
             budget=3, seed=0, storage=_storage(tmp_path), progress=False)


def test_resume_with_another_measurer_class_is_refused(tmp_path):
    space = gemm_space(8)
    tune(space, ScheduleMeasurer(space), "random", budget=2, seed=0,
         storage=_storage(tmp_path), progress=False)

    class Other(ScheduleMeasurer):
        pass

    with pytest.raises(ValueError, match=r'measurer: "ScheduleMeasurer" \(then\) vs '
                       r'"Other" \(now\)'):
        create_study(space, Other(space), seed=0, storage=_storage(tmp_path))


def test_replay_fingerprint_follows_the_table():
    space = gemm_space(4)
    n = len(space)
    values = {"cost": np.arange(n, dtype=float)}
    status = np.zeros(n, np.int8)
    a = ReplayMeasurer(space, GroundTruth(values, status, {}))
    b = ReplayMeasurer(space, GroundTruth({"cost": np.arange(n, dtype=float)}, status, {}))
    c = ReplayMeasurer(space, GroundTruth({"cost": np.arange(n, dtype=float) + 1}, status, {}))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert a.settings()["truth"]["n_rows"] == n


def test_study_without_fingerprint_resumes_with_a_warning_then_is_checked(tmp_path):
    space = gemm_space(8)
    m = ScheduleMeasurer(space)
    first = create_study(space, m, seed=0, storage=_storage(tmp_path))
    name = first.optuna_study.study_name
    attrs = dict(first.optuna_study.user_attrs)
    # a study written by an older autotile: same attributes but no measurer fingerprint
    storage = optuna.storages.RDBStorage(_storage(tmp_path))
    optuna.delete_study(study_name=name, storage=storage)
    old = optuna.create_study(study_name=name, storage=storage)
    assert "autotile:seed" in attrs
    for k, v in attrs.items():
        if not k.startswith("autotile:measurer"):
            old.set_user_attr(k, v)
    with pytest.warns(UserWarning, match="records no measurer fingerprint"):
        resumed = create_study(space, m, seed=0, storage=_storage(tmp_path))
    assert resumed.optuna_study.user_attrs["autotile:measurer_fingerprint"] == m.fingerprint()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create_study(space, ScheduleMeasurer(space), seed=0, storage=_storage(tmp_path))
    with pytest.raises(ValueError, match="another measurer"):
        create_study(space, ScheduleMeasurer(space, cache=CacheConfig(size_bytes=32768)),
                     seed=0, storage=_storage(tmp_path))


class _Plain(Measurer):
    metrics = ("cost",)
    objective = "cost"

    def __init__(self, space: Any) -> None:
        self.space = space
        self.calls = 0  # mutable state: not a setting

    def _measure(self, config: Any) -> MeasureResult:
        self.calls += 1
        return MeasureResult(str(config), "ok", {"cost": float(self.space.index_of(config))})


def test_a_measurer_without_settings_is_checked_by_class_only(tmp_path):
    space = gemm_space(8)
    m = _Plain(space)
    assert m.settings() == {}
    tune(space, m, "random", budget=2, seed=0, storage=_storage(tmp_path), progress=False)
    assert m.calls == 2
    study = tune(space, m, "random", budget=3, seed=0, storage=_storage(tmp_path),
                 progress=False)
    assert len(study.optuna_study.trials) == 3


def test_settings_that_are_not_a_json_dict_are_refused():
    class Bad(_Plain):
        def settings(self) -> Any:
            return [1, 2]

    with pytest.raises(TypeError, match=r"Bad\.settings\(\) must return a JSON-able dict"):
        Bad(gemm_space(4)).fingerprint()


def test_sweep_settings_of_the_kernel_model_are_unchanged():
    """The sweep fingerprint used the public attributes before settings() existed."""
    m = KernelModelMeasurer("matmul", SHAPE, hardware=H200, params=GpuModelParams(),
                            l2_model=None)
    before = {name: jsonable(v) for name, v in sorted(vars(m).items())
              if not name.startswith("_") and name not in ("space", "objective", "metrics")}
    assert _numbers_settings(m) == before
