"""The kernel library: Triton-valid kernels, each declared as one :class:`KernelSpec`.

Every kernel is written against ``autotile.lang`` with Triton's API (``import
autotile.lang as tl``), so the same source runs under ``triton.jit``. Each
kernel module declares one :class:`KernelSpec`: the source, its knobs and
``space(shape, dtype)``, an argument builder, the NumPy reference, FLOPs and
compulsory bytes, and the GPU model that scores it. :data:`KERNELS` is the
registry (name -> spec); :func:`register_kernel` adds a user's kernel. The
kernel spaces (:func:`matmul_space`, ...) live here too.
"""

from autotile.kernels._alignment import MatmulAccess, OperandAccess, matmul_access
from autotile.kernels._flash_attention import (
    FLASH_KNOBS,
    attention_reference,
    attn_fwd_kernel,
    default_block_n,
    flash_attention,
    flash_attention_objectives,
    flash_attention_pareto,
    io_flash,
    onchip_flash_bytes,
)
from autotile.kernels._knobs import KernelKnobs, ShapeConstraint
from autotile.kernels._l2_norm import L2_NORM_KNOBS, l2_norm, l2_norm_kernel, l2_norm_reference
from autotile.kernels._layer_norm import (
    LAYER_NORM_KNOBS,
    layer_norm,
    layer_norm_fwd_kernel,
    layer_norm_reference,
)
from autotile.kernels._matmul import (
    MATMUL_KNOBS,
    PID_ORDERS,
    canonical_group_m,
    matmul,
    matmul_kernel,
    matmul_reference,
    tile_of_pid,
)
from autotile.kernels._persistent_matmul import (
    MATMUL_PERSISTENT_KNOBS,
    matmul_descriptor_persistent,
    matmul_descriptor_persistent_kernel,
    matmul_persistent,
    matmul_persistent_kernel,
)
from autotile.kernels._registry import (
    KERNELS,
    KernelRegistry,
    get_kernel_spec,
    register_kernel,
    spec_for_kernel,
)
from autotile.kernels._softmax import (
    SOFTMAX_FUSED_KNOBS,
    SOFTMAX_NAIVE_KNOBS,
    div_row_kernel,
    exp_kernel,
    io_fused_softmax,
    io_naive_softmax,
    row_max_kernel,
    row_sum_kernel,
    softmax_fused,
    softmax_kernel,
    softmax_naive,
    softmax_reference,
    sub_row_kernel,
)
from autotile.kernels._spaces import (
    DTYPE_ITEMSIZE,
    PADDING_CONSTRAINTS,
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
    space_from_knobs,
)
from autotile.kernels._spec import (
    KernelLaunch,
    KernelSpec,
    as_float_array,
    dtype_name,
    empty_array,
    new_array,
    relative_l2_error,
)
from autotile.kernels._vector_add import ADD_KNOBS, add, add_kernel, add_reference

__all__ = [
    # specs, knobs, registry and spaces
    "KernelSpec",
    "KernelLaunch",
    "KernelKnobs",
    "ShapeConstraint",
    "KERNELS",
    "KernelRegistry",
    "register_kernel",
    "get_kernel_spec",
    "spec_for_kernel",
    "new_array",
    "empty_array",
    "as_float_array",
    "dtype_name",
    "relative_l2_error",
    "space_from_knobs",
    "matmul_space",
    "persistent_matmul_space",
    "softmax_space",
    "flash_attention_space",
    "DTYPE_ITEMSIZE",
    "PADDING_CONSTRAINTS",
    # vector add
    "add_kernel",
    "add",
    "add_reference",
    "ADD_KNOBS",
    # softmax
    "row_max_kernel",
    "sub_row_kernel",
    "exp_kernel",
    "row_sum_kernel",
    "div_row_kernel",
    "softmax_kernel",
    "softmax_naive",
    "softmax_fused",
    "softmax_reference",
    "io_naive_softmax",
    "io_fused_softmax",
    "SOFTMAX_NAIVE_KNOBS",
    "SOFTMAX_FUSED_KNOBS",
    # matmul
    "matmul_kernel",
    "matmul",
    "matmul_reference",
    "tile_of_pid",
    "PID_ORDERS",
    "MATMUL_KNOBS",
    "canonical_group_m",
    "matmul_access",
    "MatmulAccess",
    "OperandAccess",
    "matmul_persistent_kernel",
    "matmul_descriptor_persistent_kernel",
    "matmul_persistent",
    "matmul_descriptor_persistent",
    "MATMUL_PERSISTENT_KNOBS",
    # attention
    "attn_fwd_kernel",
    "flash_attention",
    "attention_reference",
    "io_flash",
    "onchip_flash_bytes",
    "default_block_n",
    "FLASH_KNOBS",
    "flash_attention_objectives",
    "flash_attention_pareto",
    # normalisation
    "layer_norm_fwd_kernel",
    "layer_norm",
    "layer_norm_reference",
    "LAYER_NORM_KNOBS",
    "l2_norm_kernel",
    "l2_norm",
    "l2_norm_reference",
    "L2_NORM_KNOBS",
]

#: Old names, importable for one release: ``Constraint`` is now
#: :class:`ShapeConstraint` (a rule over a config *and* a shape, unlike
#: :class:`autotile.space.Constraint`), ``KernelInfo`` is now :class:`KernelSpec`.
Constraint = ShapeConstraint
KernelInfo = KernelSpec
