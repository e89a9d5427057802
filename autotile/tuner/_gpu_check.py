"""Check each GPU candidate's result on the call's own tensors.

:class:`GpuChecker` keeps a copy of every tensor argument as the call gave it
and, before each candidate's check run, puts the tensors back in that state,
so every candidate starts from the same inputs (a kernel that accumulates
into its output without ``reset_to_zero`` included). The first candidate
that runs is the baseline: the tensors it changed are the outputs, and a
second baseline run with those outputs poisoned (NaN) finds the pure
outputs, which are poisoned before every later run, so an element a
candidate forgets to write cannot pass with a value an earlier candidate
left there. The expected outputs are ``reference(args)`` when given, else
the baseline's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from autotile.tuner._gpu_backend import GpuBackend

__all__ = ["GpuChecker"]


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class GpuChecker:
    """Runs candidates once on the call's tensors and compares their outputs.

    Parameters
    ----------
    backend : GpuBackend
        Tensor operations and the comparison.
    named : mapping of str to value
        The call's arguments by name; the tensors among them are checked.
    reference : callable, optional
        ``reference(args_by_name) -> {name: expected tensor or array}``,
        called once on copies of the tensors as the first check run's hooks
        left them.
    rtol, atol : float, optional
        Tolerances (default :func:`~autotile.tuner._gpu_backend.gpu_tolerance`
        of each expected output's dtype).

    Attributes
    ----------
    outputs : list of str or None
        Tensors the baseline changed (None before the first run).
    write_only : list of str
        Outputs the baseline overwrote without reading (poisoned before runs).
    """

    def __init__(self, backend: GpuBackend, named: Mapping[str, Any],
                 reference: Callable[[dict[str, Any]], Any] | None = None,
                 rtol: float | None = None, atol: float | None = None) -> None:
        self.backend = backend
        self.named = dict(named)
        self.tensors = {k: v for k, v in named.items() if backend.is_tensor(v)}
        #: Copies of the tensors as the call gave them, taken before the first run (a
        #: tuning that measures nothing, every config being cached, copies nothing).
        self.saved: dict[str, Any] | None = None
        self.reference = reference
        self.rtol, self.atol = rtol, atol
        self.expected: dict[str, Any] | None = None
        self.outputs: list[str] | None = None
        self.write_only: list[str] = []

    def restore(self) -> None:
        """Put every tensor the runs may have changed back as the call gave it."""
        if self.saved is None:
            return
        names = self.tensors if self.outputs is None else self.outputs
        for n in names:
            self.backend.copy_(self.tensors[n], self.saved[n])

    def _once(self, pre: Callable[[], Any], launch: Callable[[], Any],
              post: Callable[[BaseException | None], Any], names: list[str],
              full: dict[str, Any]) -> tuple[dict[str, Any] | None, BaseException | None]:
        """One hooked run from the call's state: (copies of ``names`` after it, None) or error."""
        if self.saved is None:
            self.saved = {k: self.backend.clone(v) for k, v in self.tensors.items()}
        self.restore()
        for n in self.write_only:
            self.backend.poison_(self.tensors[n])
        pre()
        if self.reference is not None and self.expected is None:
            from autotile.tuner._check import reference_outputs

            self.expected = reference_outputs(self.reference(
                {**full, **{k: self.backend.clone(v) for k, v in self.tensors.items()}}))
        try:
            launch()
            self.backend.synchronize()
        except Exception as exc:  # noqa: BLE001 - the caller classifies it
            try:
                post(exc)
            except Exception:  # noqa: BLE001, S110 - the kernel's error is the reason
                pass
            return None, exc
        got = {n: self.backend.clone(self.tensors[n]) for n in names}
        post(None)
        return got, None

    def check(self, pre: Callable[[], Any], launch: Callable[[], Any],
              post: Callable[[BaseException | None], Any], full: dict[str, Any]
              ) -> tuple[str | None, BaseException | None]:
        """Run one candidate once and compare its outputs with the expected ones.

        Parameters
        ----------
        pre, launch, post : callable
            The candidate's hooks (``pre()``, ``post(exception)``) and launch.
        full : dict
            Every argument and meta-parameter by name (what hooks receive).

        Returns
        -------
        (reason, exception)
            ``(None, None)`` when it matches; ``(reason, None)`` when it ran
            and is wrong; ``(None, exc)`` when it raised. The tensors are
            back in the call's state afterwards (the timed runs start there).
        """
        try:
            return self._check(pre, launch, post, full)
        finally:
            self.restore()

    def _check(self, pre: Callable[[], Any], launch: Callable[[], Any],
               post: Callable[[BaseException | None], Any], full: dict[str, Any]
               ) -> tuple[str | None, BaseException | None]:
        if self.outputs is None:
            got, exc = self._once(pre, launch, post, list(self.tensors), full)
            if exc is not None:
                return None, exc
            assert got is not None
            assert self.saved is not None
            self.outputs = [n for n, v in got.items() if not self.backend.equal(v, self.saved[n])]
            self.write_only = list(self.outputs)
            again, exc = self._once(pre, launch, post, self.outputs, full)
            if exc is not None:
                return None, exc
            assert again is not None
            self.write_only = [n for n in self.outputs if self.backend.equal(again[n], got[n])]
            if self.expected is None:
                self.expected = {n: got[n] for n in self.outputs}
                return None, None
            return self._compare(got), None
        wanted = set(self.outputs) | set(self.expected or {})
        got, exc = self._once(pre, launch, post, [n for n in self.tensors if n in wanted], full)
        if exc is not None:
            return None, exc
        assert got is not None
        return self._compare(got), None

    def _compare(self, got: Mapping[str, Any]) -> str | None:
        assert self.expected is not None
        for name, want in self.expected.items():
            if name not in got:
                return f"the expected outputs name {name!r}, which is not a tensor argument"
            why = self.backend.mismatch(name, got[name], want, self.rtol, self.atol)
            if why is not None:
                return why
        return None
