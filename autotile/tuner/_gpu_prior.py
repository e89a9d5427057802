"""The GPU model as the prior of a GPU tuning: a prediction per config, no device used."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from autotile.measure import H100_SXM, HardwareProfile, MeasureResult
from autotile.tuner._config import LaunchConfig
from autotile.tuner._gpu_backend import is_triton_jit
from autotile.tuner._gpu_protocol import Prediction

__all__ = ["model_prior", "model_hardware", "ModelPrior"]


class ModelPrior:
    """``prior(config) -> Prediction``, with what one prediction is expected to cost.

    Parameters
    ----------
    predict : callable
        ``predict(config) -> Prediction``.
    cost_hint_s : float or None
        Seconds per prediction, a low estimate known before any prediction
        (:data:`~autotile.tuner._library.RECORDS_COST_HINT_S`, say); None
        when unknown.

    Raises
    ------
    ValueError
        If ``cost_hint_s`` is not a finite number >= 0 (nor None).
    """

    def __init__(self, predict: Callable[[LaunchConfig], Prediction],
                 cost_hint_s: float | None) -> None:
        if cost_hint_s is not None and (isinstance(cost_hint_s, bool) or not isinstance(
                cost_hint_s, (int, float)) or not (math.isfinite(cost_hint_s)
                                                   and cost_hint_s >= 0)):
            raise ValueError(f"cost_hint_s must be a finite number of seconds >= 0 or None, "
                             f"got cost_hint_s={cost_hint_s!r}")
        self._predict = predict
        self.cost_hint_s = None if cost_hint_s is None else float(cost_hint_s)

    def __call__(self, config: LaunchConfig) -> Prediction:
        """The prediction of one config."""
        return self._predict(config)


def model_hardware(device_name: str) -> HardwareProfile:
    """The GPU-model profile for a device name: H200 for an H200, else H100 SXM.

    The profile only ranks candidates (the prior); times come from the device.

    Parameters
    ----------
    device_name : str
        E.g. ``"NVIDIA H200"`` (``torch.cuda.get_device_name()``).

    Returns
    -------
    HardwareProfile
        :data:`~autotile.measure.gpu.H200_MEASURED_L2` or
        :data:`~autotile.measure.H100_SXM`.
    """
    if "H200" in device_name.upper():
        from autotile.measure.gpu import H200_MEASURED_L2

        return H200_MEASURED_L2
    return H100_SXM


def _prediction(res: Any) -> Prediction:
    if isinstance(res, MeasureResult):
        return (Prediction(float(res.metrics["time_s"])) if res.ok
                else Prediction(None, res.error or res.status))
    if isinstance(res, (int, float)) and not isinstance(res, bool):
        t = float(res)
        return Prediction(t) if math.isfinite(t) and t >= 0 else Prediction(
            None, f"scorer returned {t}")
    return Prediction(None)


def model_prior(fn: Any, scorer: Any, hardware: HardwareProfile | None, device_name: str,
                named: Mapping[str, Any], grid: Any, verbose: bool = False
                ) -> ModelPrior | None:
    """Return ``model(config) -> Prediction`` for one call of a kernel, or None.

    Parameters
    ----------
    fn : object
        The kernel: an autotile ``@jit`` kernel or a ``triton.jit`` function.
    scorer : callable or None
        ``scorer(config, args_by_name) -> MeasureResult | float`` (seconds;
        with ``grid=`` when it has a true ``wants_grid``), called with the
        call's own arguments (device tensors). None: :func:`~autotile.perf_model`
        on the kernel's source in autotile's interpreter, on zero-filled host
        stand-ins of the tensors (the spec's model for a registered kernel,
        else the records model). A scorer may declare ``cost_hint_s``, its
        seconds per prediction (a low estimate); without it the cost is
        unknown until measured.
    hardware : HardwareProfile or None
        Profile of the default model; None: :func:`model_hardware` of
        ``device_name``.
    device_name : str
    named : mapping of str to value
        The call's arguments by name.
    grid : tuple or callable
        The call's grid.
    verbose : bool, default=False
        Print why no model could be built.

    Returns
    -------
    ModelPrior or None
        ``prior(config) -> Prediction``: ``"ok"`` results become ``Prediction(time_s)``, others
        ``Prediction(None, reason)`` (infeasible), a raise or any other
        value ``Prediction(None)`` (unknown). None when the default model
        cannot be built for this kernel (the tuner then measures in the
        user's order). Its ``cost_hint_s`` is the scorer's (the default
        model's: :attr:`~autotile.tuner._perf_model.PerfModel.cost_hint_s`).
    """
    score: Callable[[LaunchConfig], Any]
    hint: Any
    if scorer is not None:
        hint = getattr(scorer, "cost_hint_s", None)

        def score(c: LaunchConfig) -> Any:
            extra = {"grid": grid} if getattr(scorer, "wants_grid", False) else {}
            return scorer(c, dict(named), **extra)
    else:
        from autotile.tuner._perf_model import PerfModel

        hw = hardware or model_hardware(device_name)
        try:
            pm = PerfModel(fn.fn if is_triton_jit(fn) else fn, hw, grid)
        except Exception as exc:  # noqa: BLE001 - no model: measure in the user's order
            if verbose:
                print(f"autotile autotuning: no model prior for this kernel ({exc})")
            return None
        hint = pm.cost_hint_s

        def score(c: LaunchConfig) -> Any:
            return pm.estimate(**named, **c.all_kwargs())

    def predict_one(c: LaunchConfig) -> Prediction:
        try:
            return _prediction(score(c))
        except Exception:  # noqa: BLE001 - unknown prediction
            return Prediction(None)

    return ModelPrior(predict_one, hint)
