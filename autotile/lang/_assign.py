"""Python scalars assigned in a kernel become typed scalars, as in Triton.

Triton's code generator turns the value of every plain assignment ``x = v``
into a tensor when ``v`` is a Python ``bool``/``int``/``float`` (or a
``tl.constexpr`` holding one): ``value = 1`` makes an int32 scalar, so
``value.dtype`` is ``tl.int32`` and ``acc = 0.0`` then ``acc += x_fp16``
accumulates in float32.  Triton's interpreter (``TRITON_INTERPRET=1``) gets
the same result by rewriting the kernel's syntax tree: ``x = v`` becomes
``x = to_tensor(v)``.  :func:`kernel_body` does that rewrite for autotile's
kernels.

Only plain ``=`` assignments change.  ``x: tl.constexpr = v`` keeps ``v`` a
compile-time constant, augmented assignments and ``for`` targets are
untouched, and a kernel whose source Python cannot find (one built with
``exec``) runs unchanged, as under Triton's interpreter.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
from typing import Any

from autotile.lang._tensor import constexpr, tensor, to_tensor

__all__ = ["assigned", "kernel_body", "clear_cache"]

#: Name the rewritten code calls; a free variable of the rewritten function.
_HELPER = "_autotile_assigned_"
_OUTER = "_autotile_outer_"


def assigned(v: Any) -> Any:
    """The value ``x = v`` binds in a kernel (Triton's ``semantic.to_tensor``).

    A ``bool`` becomes an int1 scalar, an ``int`` an int32 scalar (uint32,
    int64 or uint64 when it does not fit), a ``float`` a float32 scalar
    (float64 outside float32's range); a ``tl.constexpr`` holding one of
    those likewise.  Anything else is returned unchanged.

    Raises
    ------
    LangError
        For an int outside ``[-2**63, 2**64)`` ("Nonrepresentable integer").
    """
    if isinstance(v, tensor):
        return v
    if isinstance(v, constexpr):
        v = v.value
    if isinstance(v, (bool, int, float)):
        return to_tensor(v)
    return v


class _Rewrite(ast.NodeTransformer):
    """``x = v`` -> ``x = _autotile_assigned_(v)`` (Triton's interpreter ``ASTTransformer``)."""

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        self.generic_visit(node)
        node.value = ast.Call(func=ast.Name(id=_HELPER, ctx=ast.Load()), args=[node.value],
                              keywords=[])
        return node


@functools.lru_cache(maxsize=None)
def _rewritten_code(code: types.CodeType) -> types.CodeType | None:
    """Code of the function ``code`` belongs to, with assignments rewritten.

    None when the source is not available or is not a plain ``def`` of that
    name (the kernel then runs unchanged).
    """
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    src = "".join(lines)
    body = textwrap.dedent(src)
    indent = len(lines[0]) - len(lines[0].lstrip()) if body != src else 0
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != code.co_name:
        return None
    fdef = tree.body[0]
    fdef.decorator_list = []
    fdef = _Rewrite().visit(fdef)
    # The function is defined inside an outer one whose parameters are the helper and the
    # original free variables: the rewritten function then takes both from its closure.
    params = ", ".join((_HELPER,) + code.co_freevars)
    outer = ast.parse(f"def {_OUTER}({params}):\n    return {code.co_name}\n")
    outer_def = outer.body[0]
    assert isinstance(outer_def, ast.FunctionDef)
    outer_def.body.insert(0, fdef)
    ast.fix_missing_locations(outer)
    for node in ast.walk(fdef):  # columns of the source file (dedent removed ``indent``)
        for attr in ("col_offset", "end_col_offset"):
            col = getattr(node, attr, None)
            if col is not None:
                setattr(node, attr, col + indent)
    ast.increment_lineno(outer, first - 1)
    try:
        module = compile(outer, code.co_filename, "exec")
    except SyntaxError:
        return None
    outer_code = next(c for c in module.co_consts
                      if isinstance(c, types.CodeType) and c.co_name == _OUTER)
    return next(c for c in outer_code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == code.co_name)


def kernel_body(fn: Any) -> Any:
    """``fn`` with every ``x = v`` binding :func:`assigned` ``(v)``.

    The new function shares ``fn``'s globals, defaults and closure cells, so
    it sees the same names (globals defined later, enclosing variables
    rebound later) as ``fn``.  Returns ``fn`` itself when its source is not
    available.
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn
    new = _rewritten_code(code)
    if new is None:
        return fn
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    cells[_HELPER] = types.CellType(assigned)
    out = types.FunctionType(new, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[n] for n in new.co_freevars))
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__qualname__ = fn.__qualname__
    out.__doc__ = fn.__doc__
    out.__dict__.update(fn.__dict__)
    out.__wrapped__ = fn  # type: ignore[attr-defined]
    return out


def clear_cache() -> None:
    """Forget the rewritten code of every kernel (after editing a kernel's source file)."""
    _rewritten_code.cache_clear()
