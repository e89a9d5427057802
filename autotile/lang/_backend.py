"""Which compiler backend's extra rules the interpreter enforces.

Triton's CPU interpreter runs some programs that Triton's NVIDIA backend refuses
to compile: a ``tl.dot`` whose inner dimension ``K`` is below the backend's
``min_dot_size`` (16, or 32 for 8-bit operands) is the one such rule autotile
knows. By default autotile's interpreter behaves as Triton's does (it computes
the program) and warns with :class:`TritonBackendWarning`; inside
``with backend_rules("nvidia"):`` the rule is an error, as on the GPU. The GPU
model enters that context when it runs a kernel to score a config, so a config
the GPU cannot compile is never scored as feasible.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from autotile.errors import InvalidConfigError

__all__ = ["BACKENDS", "TritonBackendWarning", "backend_rules", "current_backend"]

#: The rule sets: ``"interpreter"`` (Triton's CPU interpreter: warn) and
#: ``"nvidia"`` (Triton's NVIDIA backend: refuse).
BACKENDS = ("interpreter", "nvidia")

_BACKEND: contextvars.ContextVar[str] = contextvars.ContextVar("autotile_backend",
                                                               default="interpreter")


class TritonBackendWarning(UserWarning):
    """A program Triton's interpreter runs but Triton's NVIDIA backend refuses to compile."""


def current_backend() -> str:
    """The rule set in force: ``"interpreter"`` (the default) or ``"nvidia"``."""
    return _BACKEND.get()


@contextlib.contextmanager
def backend_rules(backend: str) -> Iterator[None]:
    """Enforce ``backend``'s compile rules inside the ``with`` block.

    Parameters
    ----------
    backend : {"interpreter", "nvidia"}
        ``"nvidia"`` turns the NVIDIA backend's rules (``tl.dot``'s minimum
        ``K``) into :class:`~autotile.errors.LangError`; ``"interpreter"``
        computes such programs, as Triton's CPU interpreter does, and warns
        with :class:`TritonBackendWarning`.

    Raises
    ------
    InvalidConfigError
        If ``backend`` is not one of :data:`BACKENDS`.
    """
    if backend not in BACKENDS:
        raise InvalidConfigError(f"backend_rules() takes one of {BACKENDS}, got {backend!r}")
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)
