"""The GPU model registry: model name -> ``model(measurer, config, cfg) -> MeasureResult``.

A :class:`~autotile.kernels.KernelSpec` names the model that scores it
(``spec.model``); :class:`~autotile.measure.KernelModelMeasurer` looks the
name up here. ``"records"`` works for any kernel; the analytic models are
worth having where the records model would miss something the kernel's
structure gives away (matmul's L2 program order, flash attention's IO
formula).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.measure._result import MeasureResult
from autotile.measure.gpu._analytic import (
    flash_attention_io,
    row_softmax,
    tile_matmul,
    tile_matmul_tma,
)
from autotile.measure.gpu._records_model import records_model

__all__ = ["GPU_MODELS", "GpuModel", "register_gpu_model"]

#: ``model(measurer, config, cfg) -> MeasureResult``.
GpuModel = Callable[[Any, Any, dict[str, Any]], MeasureResult]


class _Registry(Mapping[str, GpuModel]):
    def __init__(self) -> None:
        self._models: dict[str, GpuModel] = {}

    def __getitem__(self, name: str) -> GpuModel:
        try:
            return self._models[name]
        except KeyError:
            raise InvalidConfigError(f"no GPU model named {name!r}; registered models: "
                                     f"{tuple(self._models)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._models)

    def __len__(self) -> int:
        return len(self._models)

    def __repr__(self) -> str:
        return f"GPU_MODELS({list(self._models)})"


#: Read-only map from GPU-model name to the model function.
GPU_MODELS = _Registry()


def register_gpu_model(name: str, model: GpuModel, *, replace: bool = False) -> GpuModel:
    """Register ``model`` under ``name`` (a spec selects it with ``model=name``).

    Raises
    ------
    InvalidConfigError
        If ``name`` is taken and ``replace`` is False.
    TypeError
        If ``model`` is not callable.
    """
    if not callable(model):
        raise TypeError(f"a GPU model must be callable, got {type(model).__name__}")
    if name in GPU_MODELS._models and not replace:
        raise InvalidConfigError(f"a GPU model named {name!r} is already registered")
    GPU_MODELS._models[name] = model
    return model


for _name, _fn in (("records", records_model), ("tile_matmul", tile_matmul),
                   ("tile_matmul_tma", tile_matmul_tma),
                   ("row_softmax", row_softmax), ("flash_attention_io", flash_attention_io)):
    register_gpu_model(_name, _fn)
