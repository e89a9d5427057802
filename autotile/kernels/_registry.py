"""The kernel registry: name -> :class:`KernelInfo`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from autotile.kernels._flash_attention import FLASH_KNOBS, attention_reference, flash_attention
from autotile.kernels._knobs import KernelInfo, KernelKnobs
from autotile.kernels._l2_norm import L2_NORM_KNOBS, l2_norm, l2_norm_reference
from autotile.kernels._layer_norm import LAYER_NORM_KNOBS, layer_norm, layer_norm_reference
from autotile.kernels._matmul import MATMUL_KNOBS, matmul, matmul_reference
from autotile.kernels._persistent_matmul import (
    MATMUL_PERSISTENT_KNOBS,
    matmul_descriptor_persistent,
    matmul_descriptor_persistent_kernel,
    matmul_persistent,
)
from autotile.kernels._softmax import (
    SOFTMAX_FUSED_KNOBS,
    SOFTMAX_NAIVE_KNOBS,
    softmax_fused,
    softmax_naive,
    softmax_reference,
)
from autotile.kernels._vector_add import ADD_KNOBS, add, add_reference

__all__ = ["KERNELS"]


def _info(name: str, launcher: Callable[..., Any], reference: Callable[..., Any],
          knobs: KernelKnobs, doc: str, kernel: Any = None) -> KernelInfo:
    return KernelInfo(name=name, kernel=knobs.kernel if kernel is None else kernel,
                      launcher=launcher, reference=reference, knobs=knobs, doc=doc)


#: Read-only map from kernel name to its :class:`KernelInfo`.
KERNELS: Mapping[str, KernelInfo] = MappingProxyType({
    info.name: info
    for info in (
        _info("vector_add", add, add_reference, ADD_KNOBS, "out = x + y (tutorial 01)"),
        _info("softmax_naive", softmax_naive, softmax_reference, SOFTMAX_NAIVE_KNOBS,
              "row softmax as five kernels: max, subtract, exp, sum, divide"),
        _info("softmax_fused", softmax_fused, softmax_reference, SOFTMAX_FUSED_KNOBS,
              "row softmax, one program per row (tutorial 02)"),
        _info("matmul", matmul, matmul_reference, MATMUL_KNOBS,
              "C = A @ B, grouped or row-major tile order (tutorial 03)"),
        _info("matmul_persistent", matmul_persistent, matmul_reference,
              MATMUL_PERSISTENT_KNOBS, "C = A @ B on NUM_SMS looping programs (seed §5)"),
        _info("matmul_descriptor_persistent", matmul_descriptor_persistent, matmul_reference,
              MATMUL_PERSISTENT_KNOBS, "persistent C = A @ B through tensor descriptors",
              kernel=matmul_descriptor_persistent_kernel),
        _info("flash_attention", flash_attention, attention_reference, FLASH_KNOBS,
              "attention forward with online softmax, causal or not (tutorial 06)"),
        _info("layer_norm", layer_norm, layer_norm_reference, LAYER_NORM_KNOBS,
              "layer-norm forward (tutorial 05)"),
        _info("l2_norm", l2_norm, l2_norm_reference, L2_NORM_KNOBS,
              "row-wise L2 norm (seed exercise 1)"),
    )
})
