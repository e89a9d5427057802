"""A kernel as one unit: :class:`KernelSpec` and the launches it makes.

A :class:`KernelSpec` is everything the rest of autotile needs to know about a
kernel, declared once next to its source: the Triton-valid ``@jit`` function,
its knobs and ``space(shape, dtype)``, the problem-size names, an argument
builder for any shape (the real size and a small instance), the NumPy
reference, useful FLOPs and compulsory bytes, and the name of the GPU model
that scores it (``"records"``, the model built from the interpreter's own
records, unless an analytic model is worth having). The GPU model
(:class:`autotile.measure.KernelModelMeasurer`), real-GPU timing
(:class:`autotile.measure.TritonMeasurer`) and ``@autotune`` take a spec or a
registered name, and none of them branches on a kernel's name.

This is autotile's counterpart of TVM's ``@autotvm.template``: a new kernel is
one file that defines a ``@jit`` function and a spec, plus one registry line
(:func:`autotile.kernels.register_kernel`, or a line in ``_registry.py`` for
the library).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError
from autotile.kernels._knobs import KernelKnobs
from autotile.space import Space

__all__ = ["KernelSpec", "KernelLaunch", "LAUNCH_OPTIONS", "DTYPE_ITEMSIZE_BYTES",
           "relative_l2_error", "default_rtol", "as_float_array", "dtype_name", "new_array",
           "empty_array"]

#: Triton launch options a config may set besides the kernel's meta-parameters.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

#: Bytes per element of the operand dtypes a spec may declare.
DTYPE_ITEMSIZE_BYTES: Mapping[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4}

Shape = Mapping[str, int]


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel launch of a config: what ``kernel[grid](*args, **kwargs)`` is called with.

    Attributes
    ----------
    kernel : JITFunction
        The ``@jit`` function launched.
    grid : tuple of int
        Programs along each grid axis (1 to 3 entries).
    args : dict of str to object
        Non-constexpr arguments by parameter name (arrays, sizes, strides).
    meta : dict of str to object
        Constexpr meta-parameters by name.
    num_warps, num_stages : int
        Triton's launch options.
    """

    kernel: Any
    grid: tuple[int, ...]
    args: Mapping[str, Any]
    meta: Mapping[str, Any]
    num_warps: int = 4
    num_stages: int = 3

    @property
    def n_programs(self) -> int:
        """Programs in the grid (product of its entries)."""
        return math.prod(int(g) for g in self.grid)

    def positional(self) -> list[Any]:
        """The kernel's non-constexpr arguments in parameter order."""
        names = kernel_arg_names(self.kernel)
        missing = [n for n in names if n not in self.args and n not in self.meta]
        if missing:
            raise InvalidConfigError(
                f"launch of {kernel_name(self.kernel)!r} misses arguments {missing}")
        return [self.args[n] for n in names if n not in self.meta]

    def run(self, **interpreter_options: Any) -> None:
        """Launch on autotile's interpreter (``interpreter_options``: ``batch_programs``, ...)."""
        self.kernel[self.grid](*self.positional(), **self.meta, num_warps=self.num_warps,
                               num_stages=self.num_stages, **interpreter_options)


def kernel_name(kernel: Any) -> str:
    """``__name__`` of a ``@jit`` function (or of a plain function)."""
    return str(getattr(kernel, "__name__", getattr(getattr(kernel, "fn", None), "__name__",
                                                    repr(kernel))))


def kernel_arg_names(kernel: Any) -> list[str]:
    """Parameter names of a ``@jit`` function, in order."""
    names = getattr(kernel, "arg_names", None)
    if names is not None:
        return list(names)
    import inspect

    return list(inspect.signature(getattr(kernel, "fn", kernel)).parameters)


def _no_constexprs(shape: Shape, dtype: str) -> dict[str, Any]:
    return {}


def _default_small(shape: Shape) -> dict[str, int]:
    return {k: min(int(v), 64) for k, v in shape.items()}


def _no_model_knobs() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, eq=False)
class KernelSpec:
    """Everything autotile knows about one kernel, declared next to its source.

    Parameters
    ----------
    name : str
        Registry key, e.g. ``"matmul"``.
    kernel : JITFunction
        The Triton-valid ``@jit`` function, defined at the top level of its
        module (so that :func:`autotile.measure.triton_source` can port it).
    knobs : KernelKnobs
        Knob choices and ``(config, shape)`` constraints.
    shape_names : tuple of str
        Problem-size names, e.g. ``("M", "N", "K")``.
    make_args : callable
        ``make_args(shape, dtype, rng) -> dict``: the kernel's non-constexpr
        arguments by parameter name for ``shape`` (NumPy arrays, sizes,
        strides). ``rng`` is a :class:`numpy.random.Generator`, or None for
        zero-filled inputs (the GPU model: zero pages are not touched until
        read, so a real-size instance is cheap).
    grid : callable
        ``grid(shape, meta) -> tuple of int``; ``meta`` holds the launch's
        constexprs and options.
    reference : callable
        ``reference(args) -> dict``: expected value of each output argument
        by name, computed with NumPy from the inputs in ``args``.
    flops : callable
        ``flops(shape) -> float``: useful floating-point operations of one
        launch (padded tiles excluded).
    compulsory_bytes : callable
        ``compulsory_bytes(shape, dtype) -> float``: bytes that any
        implementation must move from and to HBM (inputs read once, outputs
        written once).
    shape_of : callable
        ``shape_of(args) -> (shape, dtype)``: the problem shape and operand
        dtype of a call, from its arguments by name (``@autotune``).
    constexprs : callable, optional
        ``constexprs(shape, dtype) -> dict``: meta-parameters that the shape
        fixes rather than a knob (softmax's ``BLOCK_SIZE = next_power_of_2(N)``).
    space_fn : callable, optional
        ``space_fn(shape, dtype, hardware) -> Space`` when the space is more
        than :attr:`knobs` with the shape bound (the library's matmul, softmax
        and attention spaces); default :func:`~autotile.kernels.space_from_knobs`.
    launches_fn : callable, optional
        ``launches_fn(spec, shape, dtype, config, args) -> list of KernelLaunch``
        for a kernel that runs as several launches (the naive softmax); default
        one launch of :attr:`kernel`.
    model : str, default="records"
        Name of the GPU model in :data:`autotile.measure.GPU_MODELS`:
        ``"records"`` derives the cost from a reduced interpreter run and
        works for any kernel; the library's analytic models are
        ``"tile_matmul"``, ``"row_softmax"`` and ``"flash_attention_io"``.
    model_knobs : mapping, optional
        Knobs that exist in the space only for the model, with the value the
        kernel itself runs (softmax's ``ROWS_PER_PROGRAM: 1``); a config with
        another value is infeasible on a GPU.
    dtypes : tuple of str, default=("float16", "bfloat16", "float32")
        Operand dtypes the kernel accepts.
    default_dtype : str, default="float16"
    small_shape : callable, optional
        ``small_shape(shape) -> shape``: the small instance checked in the
        interpreter (default: every size capped at 64).
    optional_shape_names : tuple of str, default=()
        Sizes a shape may give besides :attr:`shape_names` (attention's
        ``heads``).
    rtol : float, optional
        Relative L2 error allowed against the reference (default by dtype:
        1e-2 for 16-bit operands, 5e-3 for float32).
    launcher : callable, optional
        The host-side function that allocates outputs and launches (NumPy
        in, NumPy out), for users.
    host_reference : callable, optional
        NumPy reference with :attr:`launcher`'s signature.
    doc : str, default=""
        One line on what the kernel computes.

    Raises
    ------
    InvalidConfigError
        If ``name`` is empty, ``shape_names`` is empty, ``default_dtype`` is not in
        ``dtypes`` or a dtype is unknown.
    """

    name: str
    kernel: Any
    knobs: KernelKnobs
    shape_names: tuple[str, ...]
    make_args: Callable[[Shape, str, np.random.Generator | None], dict[str, Any]]
    grid: Callable[[Shape, Mapping[str, Any]], tuple[int, ...]]
    reference: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    flops: Callable[[Shape], float]
    compulsory_bytes: Callable[[Shape, str], float]
    shape_of: Callable[[Mapping[str, Any]], tuple[dict[str, int], str]]
    constexprs: Callable[[Shape, str], dict[str, Any]] = _no_constexprs
    space_fn: Callable[[dict[str, int], str, Any], Space] | None = None
    launches_fn: Callable[..., list[KernelLaunch]] | None = None
    model: str = "records"
    model_knobs: Mapping[str, Any] = field(default_factory=_no_model_knobs)
    dtypes: tuple[str, ...] = ("float16", "bfloat16", "float32")
    default_dtype: str = "float16"
    small_shape: Callable[[Shape], dict[str, int]] = _default_small
    optional_shape_names: tuple[str, ...] = ()
    rtol: float | None = None
    launcher: Callable[..., Any] | None = None
    host_reference: Callable[..., Any] | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidConfigError(f"a KernelSpec needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "shape_names", tuple(self.shape_names))
        object.__setattr__(self, "optional_shape_names", tuple(self.optional_shape_names))
        object.__setattr__(self, "dtypes", tuple(self.dtypes))
        object.__setattr__(self, "model_knobs", dict(self.model_knobs))
        if not self.shape_names:
            raise InvalidConfigError(f"KernelSpec {self.name!r}: shape_names must not be empty")
        bad = [d for d in self.dtypes if d not in DTYPE_ITEMSIZE_BYTES]
        if bad:
            raise InvalidConfigError(f"KernelSpec {self.name!r}: dtypes must be among "
                                     f"{sorted(DTYPE_ITEMSIZE_BYTES)}, got {bad}")
        if self.default_dtype not in self.dtypes:
            raise InvalidConfigError(f"KernelSpec {self.name!r}: default_dtype="
                                     f"{self.default_dtype!r} is not in dtypes={self.dtypes}")

    def __repr__(self) -> str:
        return f"KernelSpec({self.name!r}, kernel={kernel_name(self.kernel)}, model={self.model!r})"

    # -- shapes and dtypes ---------------------------------------------------------------
    def check_shape(self, shape: Any, owner: str | None = None,
                    error: type[Exception] = InvalidConfigError) -> dict[str, int]:
        """Validate a problem shape: a mapping with every name of :attr:`shape_names`.

        Returns
        -------
        dict of str to int
            Sizes as Python ints, in :attr:`shape_names` order then optional ones.

        Raises
        ------
        TypeError
            If ``shape`` is not a mapping.
        InvalidConfigError
            (or ``error``) If a size is missing, unknown, not an int or not positive.
        """
        who = owner or f"kernel {self.name!r}"
        if not isinstance(shape, Mapping):
            raise TypeError(f"{who}: shape must be a mapping such as "
                            f"{dict.fromkeys(self.shape_names, 1024)}, got "
                            f"{type(shape).__name__} {shape!r}")
        allowed = (*self.shape_names, *self.optional_shape_names)
        unknown = sorted(set(shape) - set(allowed))
        missing = [n for n in self.shape_names if n not in shape]
        if missing or unknown:
            raise error(
                f"{who}: shape of {self.name!r} takes the keys {self.shape_names}"
                + (f" (optionally {self.optional_shape_names})" if self.optional_shape_names
                   else "")
                + (f", got unknown {unknown}" if unknown else "")
                + (f", missing {missing}" if missing else "") + f" in shape={dict(shape)}")
        out: dict[str, int] = {}
        for k in allowed:
            if k not in shape:
                continue
            v = shape[k]
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise error(f"{who}: {k} must be a positive int, got {k}={v!r}")
            out[k] = int(v)
        return out

    def check_dtype(self, dtype: str | None) -> str:
        """Return ``dtype`` (default :attr:`default_dtype`) if the kernel accepts it.

        A NumPy dtype or scalar type (``np.float16``) is taken by its name.

        Parameters
        ----------
        dtype : str, NumPy dtype or scalar type, or None
            The element type asked for (``"float16"``, ``np.dtype("float16")``,
            ``np.float16``); None means :attr:`default_dtype`.

        Returns
        -------
        str
            The dtype's name, one of :attr:`dtypes`.

        Raises
        ------
        InvalidConfigError
            If the kernel does not accept ``dtype``.
        """
        d: Any = self.default_dtype if dtype is None else dtype
        if not isinstance(d, str):
            try:
                d = np.dtype(d).name
            except TypeError:
                pass
        if d not in self.dtypes:
            raise InvalidConfigError(f"kernel {self.name!r} takes dtype in {self.dtypes}, "
                                     f"got dtype={d!r}")
        return str(d)

    # -- space ---------------------------------------------------------------------------
    def space(self, shape: Shape, dtype: str | None = None, hardware: Any = None) -> Space:
        """The search space of this kernel at ``shape``.

        Parameters
        ----------
        shape : mapping of str to int
        dtype : str, optional
            Default :attr:`default_dtype`.
        hardware : HardwareProfile, optional
            For knobs whose choices depend on the GPU (``NUM_SMS``).

        Returns
        -------
        Space
        """
        from autotile.kernels._spaces import space_from_knobs

        s = self.check_shape(shape)
        d = self.check_dtype(dtype)
        if self.space_fn is not None:
            return self.space_fn(s, d, hardware)
        label = "x".join(str(s[n]) for n in self.shape_names)
        return space_from_knobs(self.knobs, s, name=f"{self.name}[{label},{d}]")

    # -- arguments and launches ------------------------------------------------------------
    def args(self, shape: Shape, dtype: str | None = None, *, seed: int | None = 0
             ) -> dict[str, Any]:
        """The kernel's arguments at ``shape``: random inputs (``seed``) or zeros (None).

        Returns
        -------
        dict of str to object
            Non-constexpr arguments by parameter name.
        """
        s = self.check_shape(shape)
        d = self.check_dtype(dtype)
        rng = None if seed is None else np.random.default_rng(seed)
        return self.make_args(s, d, rng)

    def small_args(self, shape: Shape, dtype: str | None = None, seed: int = 0
                   ) -> dict[str, Any]:
        """Random arguments of the small instance (:attr:`small_shape`), for the interpreter."""
        return self.args(self.small_shape(self.check_shape(shape)), dtype, seed=seed)

    def canonical_config(self, config: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
        """The config the space holds for one that launches the same way.

        ``knobs.canonical`` (:meth:`KernelKnobs.canonical_config`), e.g. a
        matmul ``GROUP_M`` above the tile rows mapped onto the space's one.

        Parameters
        ----------
        config : mapping of str to value
        shape : mapping of str to int

        Returns
        -------
        dict
            A new dict; equal to ``dict(config)`` for most kernels and configs.
        """
        return self.knobs.canonical_config(config, shape)

    def split_config(self, config: Mapping[str, Any]) -> tuple[dict[str, Any], int, int]:
        """``(meta, num_warps, num_stages)`` of a config; model-only knobs dropped.

        Raises
        ------
        InvalidConfigError
            If a model-only knob has a value the kernel does not run.
        """
        meta: dict[str, Any] = {}
        for k, v in dict(config).items():
            if k in self.model_knobs:
                if v != self.model_knobs[k]:
                    raise InvalidConfigError(
                        f"{k}={v!r}: kernel {self.name!r} runs only {k}="
                        f"{self.model_knobs[k]!r} (the knob exists in the model only)")
                continue
            if k not in LAUNCH_OPTIONS:
                meta[k] = v
        cfg = dict(config)
        return meta, int(cfg.get("num_warps", 4)), int(cfg.get("num_stages", 3))

    def launches(self, shape: Shape, dtype: str | None, config: Mapping[str, Any],
                 args: Mapping[str, Any]) -> list[KernelLaunch]:
        """The launches that run ``config`` on ``args`` (one, unless :attr:`launches_fn`).

        Raises
        ------
        InvalidConfigError
            If a model-only knob has a value the kernel does not run.
        """
        s = self.check_shape(shape)
        d = self.check_dtype(dtype)
        if self.launches_fn is not None:
            return list(self.launches_fn(self, s, d, config, args))
        meta, nw, ns = self.split_config(config)
        meta = {**self.constexprs(s, d), **meta}
        params = set(kernel_arg_names(self.kernel))
        meta = {k: v for k, v in meta.items() if k in params}
        grid = tuple(int(g) for g in self.grid(s, {**meta, "num_warps": nw,
                                                   "num_stages": ns}))
        return [KernelLaunch(self.kernel, grid, dict(args), meta, nw, ns)]

    def run(self, shape: Shape, dtype: str | None, config: Mapping[str, Any],
            args: Mapping[str, Any], **interpreter_options: Any) -> None:
        """Run ``config`` on ``args`` in autotile's interpreter (outputs written in place)."""
        for launch in self.launches(shape, dtype, config, args):
            launch.run(**interpreter_options)

    def outputs(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """Names of the output arguments (the keys :attr:`reference` returns)."""
        return tuple(self.reference(args))

    def tolerance(self, dtype: str | None = None) -> float:
        """Relative L2 error allowed against the reference for ``dtype`` (:func:`default_rtol`)."""
        if self.rtol is not None:
            return float(self.rtol)
        return default_rtol(self.check_dtype(dtype))


def default_rtol(dtype: str) -> float:
    """Relative-error threshold of the correctness check for an operand dtype.

    ``1e-2`` for float16/bfloat16 operands (fp16 rounding of the result is
    ~5e-4; a wrong tile or index gives O(1)), ``5e-3`` for float32 (Triton's
    default dot precision is tf32).
    """
    return 1e-2 if dtype in ("float16", "bfloat16") else 5e-3


def relative_l2_error(out: Any, ref: Any) -> float:
    """``||out - ref||_2 / ||ref||_2`` in float64; NaN if ``out`` holds a NaN.

    Raises
    ------
    InvalidConfigError
        If the shapes differ.
    """
    o = np.asarray(out, np.float64)
    r = np.asarray(ref, np.float64)
    if o.shape != r.shape:
        raise InvalidConfigError(f"out and ref must have one shape, got {o.shape} and {r.shape}")
    if np.isnan(o).any():
        return math.nan
    den = float(np.linalg.norm(r))
    num = float(np.linalg.norm(o - r))
    return num / den if den > 0 else num


def as_float_array(x: Any) -> Any:
    """Float32 values of a NumPy array or a bfloat16 interpreter array (for references)."""
    from autotile.lang import BFloat16Array, bf16_to_float32

    if isinstance(x, BFloat16Array):
        return bf16_to_float32(x)
    return np.asarray(x, np.float32)


def dtype_name(x: Any) -> str:
    """Operand dtype name of an argument array (``"bfloat16"`` for a bfloat16 buffer)."""
    from autotile.lang import BFloat16Array

    if isinstance(x, BFloat16Array):
        return "bfloat16"
    return str(np.asarray(x).dtype)


def new_array(shape: Sequence[int], dtype: str, rng: np.random.Generator | None,
              scale: float = 1.0) -> Any:
    """An input array of ``dtype``: standard normal times ``scale`` (``rng``) or zeros.

    Zeros come from :func:`numpy.zeros`, whose pages are not touched until
    read, so a real-size instance for the GPU model costs little memory.
    bfloat16 gives a :class:`~autotile.lang.BFloat16Array`.
    """
    from autotile.lang import BFloat16Array, bf16_array

    shp = tuple(int(s) for s in shape)
    if dtype == "bfloat16":
        if rng is None:
            return np.zeros(shp, np.uint16).view(BFloat16Array)
        return bf16_array(rng.standard_normal(shp, dtype=np.float32) * scale)
    if rng is None:
        return np.zeros(shp, np.dtype(dtype))
    return (rng.standard_normal(shp, dtype=np.float32) * scale).astype(dtype)


def empty_array(shape: Sequence[int], dtype: str) -> Any:
    """An output array of ``dtype`` (zeros; bfloat16 as a BFloat16Array)."""
    return new_array(shape, dtype, None)
