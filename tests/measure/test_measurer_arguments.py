"""KernelModelMeasurer checks the types of hardware=, params= and l2_model= at construction."""

from __future__ import annotations

import pytest

from autotile.measure import H100_SXM, GpuModelParams, KernelModelMeasurer

SHAPE = {"M": 64, "N": 64, "K": 64}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"hardware": "h200"}, r"hardware must be a HardwareProfile .*got str hardware='h200'"),
    ({"hardware": GpuModelParams()}, r"hardware must be a HardwareProfile .*got GpuModelParams"),
    ({"params": {"peak_efficiency": 0.9}}, r"params must be a GpuModelParams or None, got dict"),
    ({"params": H100_SXM}, r"params must be a GpuModelParams or None, got HardwareProfile"),
    ({"l2_model": "drift"}, r"l2_model must be an L2Model or None, got str"),
])
def test_wrong_argument_types_are_refused_at_construction(kwargs, message):
    with pytest.raises(TypeError, match=message):
        KernelModelMeasurer("matmul", SHAPE, **kwargs)


def test_swapped_positional_hardware_and_params_are_refused():
    with pytest.raises(TypeError, match="hardware must be a HardwareProfile"):
        KernelModelMeasurer("matmul", SHAPE, GpuModelParams(), H100_SXM)  # type: ignore[arg-type]
