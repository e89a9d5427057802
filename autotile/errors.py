"""Exceptions raised by autotile.

Every error names the rule that was broken and the offending value, e.g.
``"BLOCK_M must be a power of two, got BLOCK_M=48"``.
"""

from __future__ import annotations

__all__ = [
    "AutotileError",
    "InvalidConfigError",
    "ConstraintError",
    "ScheduleError",
    "LangError",
    "OutOfBoundsError",
    "IntegerOverflowError",
    "NotSupportedError",
    "UnsupportedBuiltinError",
    "UnsupportedBuiltinImportError",
    "MeasureError",
    "NotFittedError",
    "CorruptFileError",
    "SchedulerConnectionError",
]


class AutotileError(Exception):
    """Base class of every error autotile raises on purpose."""


class InvalidConfigError(AutotileError, ValueError):
    """A config names an unknown knob, misses a knob, or has a value outside its knob."""


class ConstraintError(AutotileError, TypeError):
    """A constraint could not decide a config: it raised or did not return a bool.

    The message names the constraint and the config; when the constraint
    raised, the original exception is chained as ``__cause__``. Unlike
    :class:`InvalidConfigError` (a config the space rejects) this is a bug in
    the constraint, so studies stop on it instead of skipping the config.
    """


class ScheduleError(AutotileError, ValueError):
    """An illegal schedule: bad split factor, axis used twice, axis of another stage."""


class LangError(AutotileError, TypeError):
    """A tile-language kernel misuses a builtin (bad shape, dtype or argument)."""


class OutOfBoundsError(LangError, IndexError):
    """An unmasked ``load``/``store`` touched memory outside its buffer."""


class IntegerOverflowError(LangError, OverflowError):
    """Signed integer arithmetic in a kernel left its type's range (the GPU would wrap).

    Raised by ``+ - * <<`` and unary ``-`` on signed integer blocks unless the
    launch passes ``sanitize_overflow=False`` (see :mod:`autotile.lang`), and by
    a launch whose Python int argument is outside ``[-2**63, 2**64)`` (no
    64-bit type holds it; Triton raises ``OverflowError`` too).
    """


class NotSupportedError(LangError, NotImplementedError):
    """A Triton feature the interpreter does not implement (e.g. a reduction over a tuple)."""


class UnsupportedBuiltinError(NotSupportedError, AttributeError):
    """A ``triton.language`` builtin ``autotile.lang`` does not provide (``tl.dot_scaled``, ...).

    Raised on attribute access (``tl.dot_scaled``), so ``hasattr(tl, "dot_scaled")`` is
    False; the message names the builtin and why it is missing.  The list is
    in the documentation page "The tile language and Triton".
    """


class UnsupportedBuiltinImportError(NotSupportedError, ImportError):
    """``from autotile.lang import dot_scaled``: a builtin ``autotile.lang`` does not provide.

    The import form of :class:`UnsupportedBuiltinError`, with the same
    message.  It is an ``ImportError``, not an ``AttributeError``: Python
    replaces an ``AttributeError`` raised during ``from ... import`` by a
    bare "cannot import name", which would hide the explanation.
    """


class MeasureError(AutotileError, RuntimeError):
    """A measurement could not be made (bad input to a measurer or simulator)."""


class NotFittedError(AutotileError, ValueError):
    """A cost model was used before ``fit``."""


class CorruptFileError(AutotileError, ValueError):
    """A study storage file or a ground-truth table is corrupt or truncated.

    The message names the file and what is wrong with it; the file is left
    unchanged.
    """


class SchedulerConnectionError(AutotileError, ConnectionError):
    """No connection to the Dask scheduler at the given address.

    The message names the address and Dask's reason (e.g. its connect
    timeout); Dask's own ``OSError`` is chained as ``__cause__``.
    """
