"""The kernel registry: name -> :class:`KernelSpec`.

Every measurer and ``@autotune`` looks kernels up here; none branches on a
kernel's name. A library kernel is one line below; a user's kernel is one
:func:`register_kernel` call (or is passed as a :class:`KernelSpec` directly).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.kernels._flash_attention import FLASH_ATTENTION_SPEC
from autotile.kernels._l2_norm import L2_NORM_SPEC
from autotile.kernels._layer_norm import LAYER_NORM_SPEC
from autotile.kernels._matmul import MATMUL_SPEC
from autotile.kernels._persistent_matmul import (
    MATMUL_DESCRIPTOR_PERSISTENT_SPEC,
    MATMUL_PERSISTENT_SPEC,
)
from autotile.kernels._softmax import SOFTMAX_FUSED_SPEC, SOFTMAX_NAIVE_SPEC
from autotile.kernels._spec import KernelSpec
from autotile.kernels._swiglu import SWIGLU_SPEC
from autotile.kernels._vector_add import ADD_SPEC

__all__ = ["KERNELS", "KernelRegistry", "register_kernel", "get_kernel_spec", "spec_for_kernel"]


class KernelRegistry(Mapping[str, KernelSpec]):
    """Read-only view of the registered kernels (``name -> KernelSpec``).

    Add a kernel with :func:`register_kernel`; the library's kernels are
    registered on import. Iteration follows registration order.
    """

    def __init__(self) -> None:
        self._specs: dict[str, KernelSpec] = {}

    def __getitem__(self, name: str) -> KernelSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"KernelRegistry({list(self._specs)})"

    def _add(self, spec: KernelSpec, replace: bool) -> KernelSpec:
        if not isinstance(spec, KernelSpec):
            raise TypeError(f"register_kernel takes a KernelSpec, got {type(spec).__name__}")
        old = self._specs.get(spec.name)
        if old is not None and old is not spec and not replace:
            raise InvalidConfigError(f"a kernel named {spec.name!r} is already registered; "
                                     "pass replace=True to replace it")
        self._specs[spec.name] = spec
        return spec


#: Read-only map from kernel name to its :class:`KernelSpec` (the registry).
KERNELS = KernelRegistry()


def register_kernel(spec: KernelSpec, *, replace: bool = False) -> KernelSpec:
    """Add ``spec`` to :data:`KERNELS` under ``spec.name`` and return it.

    Raises
    ------
    TypeError
        If ``spec`` is not a :class:`KernelSpec`.
    InvalidConfigError
        If another spec has that name and ``replace`` is False.
    """
    return KERNELS._add(spec, replace)


def get_kernel_spec(kernel: str | KernelSpec, owner: str = "kernel") -> KernelSpec:
    """Return ``kernel`` if it is a spec, else the registered spec of that name.

    Raises
    ------
    InvalidConfigError
        For a name that is not registered (the message lists the registered ones).
    TypeError
        For anything else.
    """
    if isinstance(kernel, KernelSpec):
        return kernel
    if isinstance(kernel, str):
        if kernel not in KERNELS:
            raise InvalidConfigError(f"{owner} must be a KernelSpec or one of the registered "
                                     f"kernels {tuple(KERNELS)}, got {kernel!r}")
        return KERNELS[kernel]
    raise TypeError(f"{owner} must be a KernelSpec or a registered kernel name, got "
                    f"{type(kernel).__name__} {kernel!r}")


def spec_for_kernel(kernel: Any) -> KernelSpec | None:
    """The registered spec whose ``kernel`` is this ``@jit`` function, or None."""
    for spec in KERNELS.values():
        if spec.kernel is kernel:
            return spec
    return None


for _spec in (
    ADD_SPEC,
    SOFTMAX_NAIVE_SPEC,
    SOFTMAX_FUSED_SPEC,
    MATMUL_SPEC,
    MATMUL_PERSISTENT_SPEC,
    MATMUL_DESCRIPTOR_PERSISTENT_SPEC,
    FLASH_ATTENTION_SPEC,
    LAYER_NORM_SPEC,
    L2_NORM_SPEC,
    SWIGLU_SPEC,
):
    register_kernel(_spec)
