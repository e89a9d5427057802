"""Scorers and small check instances for the library's kernels (matmul, softmax, attention)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.errors import InvalidConfigError
from autotile.kernels import (
    attn_fwd_kernel,
    matmul_kernel,
    matmul_persistent_kernel,
    softmax_kernel,
)
from autotile.kernels._spaces import PADDING_CONSTRAINTS
from autotile.measure import H100_SXM, HardwareProfile, KernelModelMeasurer, MeasureResult
from autotile.measure._fingerprint import canonical, jsonable
from autotile.space import Space
from autotile.space._knob import format_value
from autotile.tuner._config import Config

__all__ = ["KernelModelScorer", "library_kernel_name", "library_small_args", "MODEL_KERNELS"]

#: Kernel names :class:`KernelModelScorer` understands.
MODEL_KERNELS = ("matmul", "matmul_persistent", "softmax_fused", "flash_attention")

#: Values used for model knobs that the kernel does not have as a meta-parameter.
_KNOB_DEFAULTS = {"ROWS_PER_PROGRAM": 1}


def library_kernel_name(kernel: Any) -> str | None:
    """Return the :class:`KernelModelMeasurer` name of a library ``@jit`` kernel, or None."""
    table = {id(matmul_kernel): "matmul", id(matmul_persistent_kernel): "matmul_persistent",
             id(softmax_kernel): "softmax_fused", id(attn_fwd_kernel): "flash_attention"}
    return table.get(id(kernel))


def _dtype_name(a: Any) -> str:
    if isinstance(a, tl.BFloat16Array):
        return "bfloat16"
    return str(np.asarray(a).dtype)


def _int(v: Any) -> int:
    return int(v.value if isinstance(v, tl.constexpr) else v)


def _knob_text(space: Space, knobs: Mapping[str, Any]) -> str:
    """``"BLOCK_M=32, ..."`` in the space's knob order, as its violation messages print it."""
    return ", ".join(f"{n}={format_value(knobs[n])}" for n in space.names if n in knobs)


class _LaunchModelMeasurer(KernelModelMeasurer):
    """The GPU model of a library kernel that also scores padded (oversize) blocks.

    Checks a config against its space without the :data:`PADDING_CONSTRAINTS`
    and models such a block as what it is: one masked tile that does the
    full ``BLOCK_M x BLOCK_N`` work. Every other constraint and every
    resource limit still makes the config ``"infeasible"``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.launch_space = Space(
            self.space.knobs,
            [c for c in self.space.constraints if c.name not in PADDING_CONSTRAINTS],
            name=self.space.name)

    def _feasibility_space(self) -> Space:
        return self.launch_space


def _canonical_group_m(knobs: dict[str, Any], M: int) -> None:
    """Map a ``GROUP_M >= cdiv(M, BLOCK_M)`` onto the space's representative, in place.

    The grouped pid formula clamps the group to the tile rows left
    (``group_size_m = min(num_pid_m - first_pid_m, GROUP_M)``), so every
    such ``GROUP_M`` launches the tiles in the same column-major order, as
    Triton accepts it; the matmul space keeps only the smallest power of two
    among them (``next_power_of_2(cdiv(M, BLOCK_M))``).
    """
    g, bm = knobs.get("GROUP_M"), knobs.get("BLOCK_M")
    if not (isinstance(g, int) and isinstance(bm, int)) or isinstance(g, bool) or bm < 1:
        return
    num_pid_m = max(1, -(-M // bm))
    if g >= num_pid_m:
        knobs["GROUP_M"] = 1 << (num_pid_m - 1).bit_length()


class KernelModelScorer:
    """Score a config of a library kernel at the real shape with the GPU model.

    Wraps :class:`~autotile.measure.KernelModelMeasurer`: reads the problem
    shape and operand dtype from the call's arguments, keeps one measurer per
    (shape, dtype) and maps the config's meta-parameters plus ``num_warps``
    and ``num_stages`` onto the measurer's knobs. Meta-parameters the model
    has no knob for (``PID_ORDER``, ``BLOCK_SIZE``, ...) are ignored; a model
    knob the config lacks takes its default (``ROWS_PER_PROGRAM=1``) or makes
    the config ``"infeasible"``. A matmul ``GROUP_M`` at least
    ``cdiv(M, BLOCK_M)`` (e.g. Triton's usual ``GROUP_M=8`` on a small
    ``M``) is scored as the equivalent config the space holds: the kernel
    clamps the group to the tile rows, so the launch order is the same; a
    reason given for such a config shows ``GROUP_M`` as written and says
    which value was scored.

    A block larger than the padded problem (``BLOCK_M > max(16,
    next_power_of_2(M))``, e.g. ``BLOCK_M=64`` at ``M=1``; see
    :data:`~autotile.kernels._spaces.PADDING_CONSTRAINTS`) is scored,
    not skipped: as in Triton, the kernel masks the rows and columns past
    the problem, so the config launches and computes the right result. The
    model charges it the whole padded tile (its flops and its bytes). The
    search spaces (:func:`~autotile.measure.matmul_space`) still leave such
    blocks out.

    Parameters
    ----------
    kernel_name : {"matmul", "matmul_persistent", "softmax_fused", "flash_attention"}
        Which kernel's model. Shapes are read as: matmul ``M``, ``N``, ``K``
        and ``a_ptr``'s dtype; softmax ``input_ptr.shape[0]`` rows,
        ``n_cols``; attention ``N_CTX``, ``HEAD_DIM`` and ``Q.shape[0]``
        heads.
    hardware : HardwareProfile, default=H100_SXM
        The GPU modelled.
    **measurer_kwargs
        Passed to :class:`KernelModelMeasurer` (``params``,
        ``max_probe_programs``, ...).

    Raises
    ------
    InvalidConfigError
        For an unknown ``kernel_name``.
    TypeError
        If ``hardware`` is not a :class:`HardwareProfile`.
    """

    def __init__(self, kernel_name: str, hardware: HardwareProfile = H100_SXM,
                 **measurer_kwargs: Any) -> None:
        if kernel_name not in MODEL_KERNELS:
            raise InvalidConfigError(f"kernel_name must be one of {MODEL_KERNELS}, got "
                                     f"kernel_name={kernel_name!r}")
        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                "KernelModelScorer: hardware must be a HardwareProfile (e.g. "
                f"autotile.measure.H100_SXM), got {type(hardware).__name__} "
                f"hardware={hardware!r}")
        self.kernel_name = kernel_name
        self.hardware = hardware
        self.measurer_kwargs = dict(measurer_kwargs)
        self._measurers: dict[tuple[Any, ...], KernelModelMeasurer] = {}

    def __repr__(self) -> str:
        return f"KernelModelScorer({self.kernel_name!r}, hardware={self.hardware.name!r})"

    @property
    def cache_tag(self) -> str:
        """Identity of this scorer in the autotune disk-cache key."""
        kwargs = {k: jsonable(v) if jsonable(v) is not None or v is None else repr(v)
                  for k, v in self.measurer_kwargs.items()}
        return (f"KernelModelScorer:{self.kernel_name}:{canonical(kwargs)}:"
                f"{canonical(jsonable(self.hardware))}")

    def clear(self) -> None:
        """Forget the measurers built so far (an explicit cache)."""
        self._measurers.clear()

    def shape_of(self, args: Mapping[str, Any]) -> tuple[dict[str, int], str]:
        """Return the model's problem shape and the operand dtype name for a call.

        Raises
        ------
        KeyError
            If an argument the shape is read from is missing.
        """
        if self.kernel_name.startswith("matmul"):
            return ({"M": _int(args["M"]), "N": _int(args["N"]), "K": _int(args["K"])},
                    _dtype_name(args["a_ptr"]))
        if self.kernel_name == "softmax_fused":
            x = args["input_ptr"]
            return {"M": int(x.shape[0]), "N": _int(args["n_cols"])}, _dtype_name(x)
        q = args["Q"]
        shape = {"N": _int(args["N_CTX"]), "d": _int(args["HEAD_DIM"])}
        if q.ndim == 3:
            shape["heads"] = int(q.shape[0])
        return shape, _dtype_name(q)

    def measurer(self, args: Mapping[str, Any]) -> KernelModelMeasurer:
        """Return the (cached) measurer for the call's shape and dtype."""
        shape, dtype = self.shape_of(args)
        k = (tuple(sorted(shape.items())), dtype)
        m = self._measurers.get(k)
        if m is None:
            m = _LaunchModelMeasurer(self.kernel_name, shape, self.hardware, dtype=dtype,
                                     **self.measurer_kwargs)
            self._measurers[k] = m
        return m

    def __call__(self, config: Config, args: Mapping[str, Any]) -> MeasureResult:
        """Score ``config`` for the call with arguments ``args`` (by name).

        Returns
        -------
        MeasureResult
            ``"ok"`` with ``time_s`` and the other model metrics, or
            ``"infeasible"`` with the reason (resource limits, space
            constraints, a model knob missing from the config).
        """
        m = self.measurer(args)
        values = config.all_kwargs()
        knobs: dict[str, Any] = {}
        for name in m.space.names:
            if name in values:
                knobs[name] = values[name]
            elif name in _KNOB_DEFAULTS:
                knobs[name] = _KNOB_DEFAULTS[name]
            else:
                return MeasureResult(str(config), "infeasible", {}, 0.0,
                                     f"the {self.kernel_name} model needs knob {name}, "
                                     f"which the config does not set")
        written = dict(knobs)
        if self.kernel_name.startswith("matmul"):
            _canonical_group_m(knobs, _int(args["M"]))
        res = m.measure(knobs)
        if res.ok or knobs == written or res.error is None:
            return res
        scored, shown = _knob_text(m.space, knobs), _knob_text(m.space, written)
        if scored not in res.error:
            return res
        M, bm = _int(args["M"]), written["BLOCK_M"]
        note = (f" (GROUP_M={format_value(written['GROUP_M'])} was scored as the equivalent "
                f"GROUP_M={format_value(knobs['GROUP_M'])}: every GROUP_M >= cdiv(M, BLOCK_M)="
                f"{-(-M // bm)} launches the tiles in the same order)")
        return MeasureResult(m.config_text(written), res.status, dict(res.metrics), res.wall_time_s,
                             res.error.replace(scored, shown) + note)


# -- small check instances ------------------------------------------------------------
def _like(template: Any, values: npt.NDArray[np.float64]) -> Any:
    if isinstance(template, tl.BFloat16Array):
        return tl.bf16_array(values.astype(np.float32))
    return values.astype(np.asarray(template).dtype)


def _matmul_small(args: Mapping[str, Any]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    m, n, k = (min(_int(args[d]), s) for d, s in (("M", 72), ("N", 40), ("K", 56)))
    a = _like(args["a_ptr"], rng.standard_normal((m, k)))
    b = _like(args["b_ptr"], rng.standard_normal((k, n)))
    c = _like(args["c_ptr"], np.zeros((m, n)))
    return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": m, "N": n, "K": k,
            "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1,
            "stride_cm": n, "stride_cn": 1}


def _softmax_small(args: Mapping[str, Any]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    n = _int(args["n_cols"])
    x = _like(args["input_ptr"], rng.standard_normal((3, n)))
    out = _like(args["output_ptr"], np.zeros((3, n)))
    return {"output_ptr": out, "input_ptr": x, "input_row_stride": n,
            "output_row_stride": n}


def library_small_args(kernel: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    """Return a ``small_args`` builder for a library kernel, or None.

    ``matmul_kernel``: random contiguous A, B of the call's dtypes with
    ``M, N, K = min(M, 72), min(N, 40), min(K, 56)`` (edge tiles and the
    masked K tail are exercised). ``softmax_kernel``: 3 random rows of the
    call's ``n_cols``. Other kernels: None (pass ``small_args=``).
    """
    if kernel is matmul_kernel:
        return _matmul_small
    if kernel is softmax_kernel:
        return _softmax_small
    return None
