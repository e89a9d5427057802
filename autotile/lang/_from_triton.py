"""Run a ``triton.jit`` function in autotile's interpreter: :func:`from_triton`.

A Triton kernel's Python function refers to ``triton.language`` (as ``tl``)
and ``triton`` through its module globals. :func:`from_triton` rebuilds the
function with those names bound to :mod:`autotile.lang` instead (the same
code object, so the same source), marks ``tl.constexpr`` parameters, converts
``@triton.jit`` helpers it calls the same way, and wraps it in autotile's
``@jit``. Triton itself is never imported: modules are recognised by their
``__name__``.
"""

from __future__ import annotations

import types
from typing import Any

from autotile.errors import LangError

__all__ = ["from_triton", "is_triton_kernel"]

#: Explicit cache: id of the original function -> (that function, its conversion).
#: Holding the function keeps its id from being reused by another one.
_CONVERTED: dict[int, tuple[Any, Any]] = {}


def is_triton_kernel(obj: Any) -> bool:
    """True for a ``triton.jit`` function (a Triton ``JITFunction``/``KernelInterface``)."""
    mod = type(obj).__module__ or ""
    return mod.startswith("triton") and callable(getattr(obj, "fn", None))


def _triton_shim() -> Any:
    import autotile.lang as atl

    return types.SimpleNamespace(language=atl, jit=atl.jit, cdiv=atl.cdiv,
                                 next_power_of_2=lambda n: 1 << max(0, int(n) - 1).bit_length(),
                                 __name__="triton (autotile shim)")


def _rebind(value: Any) -> Any:
    import autotile.lang as atl

    if isinstance(value, types.ModuleType):
        if value.__name__ == "triton.language":
            return atl
        if value.__name__ == "triton":
            return _triton_shim()
        if value.__name__.startswith("triton.language."):
            sub = value.__name__.rsplit(".", 1)[-1]
            return getattr(atl, sub, atl)
    if is_triton_kernel(value):
        return from_triton(value)
    return value


def from_triton(kernel: Any) -> Any:
    """An autotile ``@jit`` kernel with the same source as a ``triton.jit`` function.

    Parameters
    ----------
    kernel : triton JITFunction, autotile JITFunction or function
        A ``@triton.jit`` kernel (or its ``.fn``), or a plain function written
        against ``triton.language``; an autotile kernel is returned unchanged.

    Returns
    -------
    autotile.lang.JITFunction
        Launch it as ``k[grid](*args, **meta)`` on NumPy arrays.

    Raises
    ------
    LangError
        If ``kernel`` is not a function or a Triton kernel.
    """
    import autotile.lang as atl
    from autotile.lang._jit import JITFunction
    from autotile.lang._tensor import constexpr

    if isinstance(kernel, JITFunction):
        return kernel
    fn = kernel.fn if is_triton_kernel(kernel) else kernel
    if not isinstance(fn, types.FunctionType):
        raise LangError(f"from_triton takes a triton.jit function or a Python function, got "
                        f"{type(kernel).__name__}")
    got = _CONVERTED.get(id(fn))
    if got is not None and got[0] is fn:  # the entry holds fn, so its id is not reused
        return got[1]
    globs = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        if name in globs:
            globs[name] = _rebind(globs[name])
    new = types.FunctionType(fn.__code__, globs, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    ann = {}
    for k, v in getattr(fn, "__annotations__", {}).items():
        is_cx = (isinstance(v, str) and v.split(".")[-1] == "constexpr") or (
            getattr(v, "__name__", "") == "constexpr")
        ann[k] = constexpr if is_cx else v
    new.__annotations__ = ann
    out = atl.jit(new)
    _CONVERTED[id(fn)] = (fn, out)
    return out
