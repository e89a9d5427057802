"""The disk cache of ``@autotune``: one JSON file per (kernel, key, candidates, hardware)."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
import types
from pathlib import Path
from typing import Any

__all__ = ["DiskCache", "default_cache_dir", "source_hash", "scorer_hash", "digest",
           "CACHE_DIR_ENV"]

#: Environment variable naming the cache directory.
CACHE_DIR_ENV = "AUTOTILE_CACHE_DIR"
#: Bumped when the file layout changes; part of every digest.
_FORMAT = "autotile-autotune-v1"


def default_cache_dir() -> Path:
    """Return ``$AUTOTILE_CACHE_DIR``, else ``~/.cache/autotile/autotune``.

    Returns
    -------
    pathlib.Path
        Read from the environment at each call (not at import).
    """
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "autotile" / "autotune"


def source_hash(fn: Any) -> str:
    """Return the SHA-256 of a kernel function's source text.

    Parameters
    ----------
    fn : callable
        The Python function under ``@jit``.

    Returns
    -------
    str
        Hex digest; when the source cannot be read (e.g. defined in a REPL),
        the digest of the module and qualified name instead.
    """
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    return hashlib.sha256(text.encode()).hexdigest()


_SIMPLE = (int, float, complex, str, bytes, bool, type(None))


def _stable(value: Any) -> str:
    """Text of a constant that is the same in every process (no memory addresses)."""
    if isinstance(value, types.CodeType):
        return _code_text(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_stable(v) for v in value) + ")"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(_stable(v) for v in value)) + ")"
    if isinstance(value, _SIMPLE):
        return repr(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _code_text(code: types.CodeType) -> str:
    """The bytecode, constants and names of a code object (nested code included)."""
    return "|".join((code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
                     code.co_code.hex(), _stable(code.co_consts), ",".join(code.co_names)))


def _function_text(fn: Any) -> str:
    """Source (when readable), bytecode, simple defaults and closure values of a function."""
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = ""
    parts = [src, _code_text(fn.__code__), _stable(fn.__defaults__ or ())]
    for cell in fn.__closure__ or ():
        try:
            parts.append(_stable(cell.cell_contents))
        except ValueError:  # an empty cell
            parts.append("<empty>")
    return "\n".join(parts)


def scorer_hash(scorer: Any) -> str:
    """Return the SHA-256 of a scorer's identity, for the autotune cache key.

    The identity is the scorer's ``__qualname__`` and module plus its code,
    so editing the scorer's body (or defining another scorer under the same
    name) changes the key:

    * a function or lambda: its source text when ``inspect`` can read it,
      its bytecode, constants and names (nested functions included), and its
      defaults and closure values when they are plain numbers, strings or
      tuples of them (other objects count by type only);
    * a bound method: the method's function as above, plus its class;
    * a ``functools.partial``: the wrapped callable and its plain arguments;
    * any other callable object: its type's qualified name and source (or
      the bytecode of its ``__call__`` when the source cannot be read).

    Parameters
    ----------
    scorer : callable
        The ``scorer`` given to ``@autotune``.

    Returns
    -------
    str
        Hex digest, stable across processes for the same code and Python
        version.
    """
    import functools

    if isinstance(scorer, functools.partial):
        text = "partial:" + scorer_hash(scorer.func) + _stable(scorer.args) + _stable(
            sorted(scorer.keywords.items()))
    elif isinstance(scorer, types.MethodType):
        text = (f"method:{type(scorer.__self__).__module__}."
                f"{type(scorer.__self__).__qualname__}\n{_function_text(scorer.__func__)}")
    elif isinstance(scorer, types.FunctionType):
        text = f"function:{scorer.__module__}.{scorer.__qualname__}\n{_function_text(scorer)}"
    else:
        cls = type(scorer)
        try:
            src = inspect.getsource(cls)
        except (OSError, TypeError):
            call = getattr(cls, "__call__", None)
            src = _function_text(call) if isinstance(call, types.FunctionType) else ""
        text = f"object:{cls.__module__}.{cls.__qualname__}\n{src}"
    return hashlib.sha256(text.encode()).hexdigest()


def digest(*parts: str) -> str:
    """Return the SHA-256 hex digest of the parts joined by NUL bytes (plus a format tag)."""
    return hashlib.sha256("\0".join((_FORMAT, *parts)).encode()).hexdigest()


class DiskCache:
    """A directory of JSON tuning results, one file per digest.

    Files are ``<directory>/<kernel name>-<digest[:32]>.json`` and are
    written atomically (temporary file then ``os.replace``), so concurrent
    processes never read a partial file; the last writer wins.

    Parameters
    ----------
    directory : str or pathlib.Path
        Created on the first :meth:`store`.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"DiskCache({str(self.directory)!r})"

    def path(self, kernel_name: str, key_digest: str) -> Path:
        """Return the file that holds ``key_digest``'s entry."""
        safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in kernel_name)[:100]
        return self.directory / f"{safe}-{key_digest[:32]}.json"

    def load(self, kernel_name: str, key_digest: str) -> dict[str, Any] | None:
        """Return the stored entry, or None when absent or unreadable.

        Returns
        -------
        dict or None
            The JSON object :meth:`store` wrote; None also for a corrupt file
            or one written for another digest.
        """
        p = self.path(kernel_name, key_digest)
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("digest") != key_digest:
            return None
        return data

    def store(self, kernel_name: str, key_digest: str, entry: dict[str, Any]) -> Path:
        """Write ``entry`` (plus its digest) atomically and return the file path.

        Raises
        ------
        OSError
            If the directory cannot be created or written.
        """
        p = self.path(kernel_name, key_digest)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.stem, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({**entry, "digest": key_digest}, f, indent=1, sort_keys=True)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return p
