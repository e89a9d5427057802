"""Evaluate one candidate: score it at the real shape, then check it in the interpreter."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import OutOfBoundsError
from autotile.measure import Measurer, MeasureResult
from autotile.tuner._check import (
    compare_outputs,
    poison,
    reference_outputs,
    snapshot,
    write_only_buffers,
)
from autotile.tuner._config import LaunchConfig
from autotile.tuner._record import TuningRecord

__all__ = ["Evaluator", "Scorer", "as_measure_result", "CandidateMeasurer"]

#: ``scorer(config, args_by_name) -> MeasureResult | float`` (seconds).
Scorer = Callable[[LaunchConfig, Mapping[str, Any]], Any]
Hook = Callable[..., Any]


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _grid_tuple(g: Any) -> tuple[Any, ...]:
    return tuple(g) if isinstance(g, (tuple, list)) else (g,)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _shapes(named: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {tuple(v.shape)}" for k, v in named.items()
                     if isinstance(v, np.ndarray))


def score_candidate(scorer: Scorer, real_args: Mapping[str, Any], extra: Mapping[str, Any],
                    config: LaunchConfig) -> tuple[str, Any]:
    """Score one candidate (on any worker): ``("ok", out)`` or ``("raised", why)``.

    Calls ``scorer(config, real_args, **extra)``; ``extra`` is
    :meth:`Evaluator.scorer_extra` (the grid and launch options for scorers
    that ask for them).
    """
    try:
        return "ok", scorer(config, real_args, **extra)
    except Exception as exc:  # noqa: BLE001 - a failed config is data
        return "raised", _err(exc)


def as_measure_result(config: LaunchConfig, out: Any) -> MeasureResult:
    """Turn a scorer's return value into a :class:`MeasureResult`.

    A :class:`MeasureResult` is kept; a number is ``time_s``: ``"ok"`` when
    finite and ``>= 0``, ``"infeasible"`` when ``+inf`` (Triton's score of a
    config that cannot run), ``"failed"`` when NaN or negative (a bug in the
    scorer, not a property of the config).

    Raises
    ------
    TypeError
        For any other return value.
    """
    if isinstance(out, MeasureResult):
        return out
    # numbers.Real: NumPy scalars too (np.float32 is no float subclass); bools are no times
    if isinstance(out, numbers.Real) and not isinstance(out, (bool, np.bool_)):
        t = float(out)
        if math.isfinite(t) and t >= 0:
            return MeasureResult(str(config), "ok", {"time_s": t})
        if t == math.inf:
            return MeasureResult(str(config), "infeasible", {}, 0.0, f"scorer returned {t}")
        return MeasureResult(str(config), "failed", {}, 0.0,
                             f"scorer returned time_s={t}; a time in seconds must be finite "
                             f"and >= 0 (inf: the config cannot run)")
    raise TypeError(f"a scorer must return a MeasureResult or a time in seconds, got "
                    f"{type(out).__name__} {_short(out)}")


class Evaluator:
    """Scores and checks the candidates of one tuning (one key).

    For each candidate, in this order:

    1. ``scorer(config, real_args)`` at the real shape. Not ``"ok"`` (the
       model says it cannot launch, or the scorer raised): the candidate is
       skipped with that status and reason and is never run.
    2. When ``check_args`` is given: run the kernel in the interpreter on
       that instance, with the hooks ``config.pre_hook(kw)``,
       ``pre_hook(kw)``, the launch, ``post_hook(kw, exception)``. A raise
       is ``"failed"``. The array arguments right after the launch (before
       ``post_hook`` restores anything) are the candidate's outputs. The
       buffers the first run wrote but never read (pure outputs) are filled
       with NaN before every later run (and the first candidate is run again
       that way), so an element a candidate forgets to write cannot pass with
       a value left there by an earlier candidate; their contents are put
       back after each run.
    3. Compare the outputs with the expected ones: ``reference(args)`` when
       given (computed once, on copies of the instance as the first
       candidate's hooks left it), else the outputs of the first candidate
       that ran (the baseline, ``"ok"`` by definition). A mismatch is
       ``"wrong"``.

    Parameters
    ----------
    fn : JITFunction
        The kernel.
    grid : tuple or callable
        Launch grid (a callable gets the check instance's arguments and the
        config's kwargs, as in Triton).
    real_args : mapping of str to value
        The call's arguments by name (the scorer reads shapes from them).
    check_args : mapping of str to value or None
        The instance the interpreter runs; None: no correctness check.
    scorer : callable
        ``scorer(config, args_by_name) -> MeasureResult | float``; a scorer
        with a true ``wants_grid`` attribute is called with ``grid=`` too,
        one with a true ``wants_launch_options`` attribute with
        ``launch_options=`` (a copy of ``launch_options`` below: a model
        that runs the kernel in the interpreter honours the call's
        ``sanitize_overflow``).
    pre_hook, post_hook : callable
        The autotuner's hooks.
    reference : callable, optional
        ``reference(args_by_name) -> {name: expected array}``.
    rtol, atol : float, optional
        Comparison tolerances (default by dtype).
    launch_options : mapping, optional
        Interpreter launch options of the call (``sanitize_overflow``,
        ``batch_programs``), passed to every check launch (and to a scorer
        that wants them).
    """

    def __init__(self, fn: Any, grid: Any, real_args: Mapping[str, Any],
                 check_args: Mapping[str, Any] | None, scorer: Scorer, pre_hook: Hook,
                 post_hook: Hook, reference: Callable[[dict[str, Any]], Any] | None = None,
                 rtol: float | None = None, atol: float | None = None,
                 launch_options: Mapping[str, Any] | None = None) -> None:
        self.fn = fn
        self.grid = grid
        self.real_args = dict(real_args)
        self.check_args = None if check_args is None else dict(check_args)
        self.scorer = scorer
        self.pre_hook = pre_hook
        self.post_hook = post_hook
        self.reference = reference
        self.rtol, self.atol = rtol, atol
        self.launch_options = dict(launch_options or {})
        self.expected: dict[str, npt.NDArray[Any]] | None = None
        self.write_only: list[str] | None = None
        self.records: list[TuningRecord] = []
        #: Outputs of every candidate checked (no ``reference``): ``majority`` votes on them.
        self.outputs: dict[LaunchConfig, dict[str, npt.NDArray[Any]]] = {}
        #: Scores computed elsewhere (a Dask cluster): config -> :func:`score_candidate`'s value.
        self.scores: dict[LaunchConfig, tuple[str, Any]] = {}

    def evaluate(self, config: LaunchConfig) -> TuningRecord:
        """Score and check one candidate; append and return its record."""
        rec = self._evaluate(config)
        self.records.append(rec)
        return rec

    def scorer_extra(self) -> dict[str, Any]:
        """Keyword arguments of the scorer: ``grid`` and ``launch_options`` if it wants them."""
        extra: dict[str, Any] = {}
        if getattr(self.scorer, "wants_grid", False):
            extra["grid"] = self.grid
        if getattr(self.scorer, "wants_launch_options", False):
            extra["launch_options"] = dict(self.launch_options)
        return extra

    def _evaluate(self, config: LaunchConfig) -> TuningRecord:
        kind, out = self.scores.get(config) or score_candidate(
            self.scorer, self.real_args, self.scorer_extra(), config)
        if kind == "raised":
            return TuningRecord(config, "failed", reason=f"scorer raised {out}")
        try:
            res = as_measure_result(config, out)
        except Exception as exc:  # noqa: BLE001 - a failed config is data
            return TuningRecord(config, "failed", reason=f"scorer raised {_err(exc)}")
        if not res.ok:
            return TuningRecord(config, res.status, reason=res.error or res.status)
        t = res.metrics.get("time_s")
        if t is None or not math.isfinite(t):
            return TuningRecord(config, "failed", reason=f"the scorer gave no finite time_s "
                                f"(metrics {sorted(res.metrics)})")
        if self.check_args is not None:
            reason = self._check(config)
            if reason is not None:
                status = "failed" if reason.startswith("interpreter raised") else "wrong"
                return TuningRecord(config, status, reason=reason, metrics=res.metrics)
        return TuningRecord(config, "ok", float(t), None, res.metrics)

    def _check(self, config: LaunchConfig) -> str | None:
        got, err = self._run(config)
        if err is not None:
            return err
        if self.write_only is None:  # first run: learn the pure outputs, then redo poisoned
            assert self.check_args is not None
            self.write_only = write_only_buffers(self.fn.last_record, self.check_args)
            if self.write_only:
                got, err = self._run(config)
                if err is not None:
                    return err
        assert got is not None
        if self.reference is None:
            self.outputs[config] = got
        if self.expected is None:  # the first candidate that runs is the baseline
            self.expected = got
            return None
        return compare_outputs(got, self.expected, self.rtol, self.atol)

    def majority(self) -> list[TuningRecord]:
        """Re-check the candidates against the largest group that agree (no ``reference``).

        Without ``reference`` the first candidate that runs is the baseline, so a
        wrong first candidate would make every correct one ``"wrong"``. After all
        candidates ran, their outputs are grouped by agreement (each with the first
        member of a group, :func:`compare_outputs`); when a group other than the
        baseline's is strictly larger, its members become ``"ok"``, every other
        checked candidate ``"wrong"`` (reason: the majority's mismatch), and a
        ``RuntimeWarning`` says so. Ties keep the baseline, with a warning. Returns
        the records.
        """
        if self.reference is not None or len(self.outputs) < 2:
            return self.records
        groups: list[list[LaunchConfig]] = []
        for c, out in self.outputs.items():
            for g in groups:
                if compare_outputs(out, self.outputs[g[0]], self.rtol, self.atol) is None:
                    g.append(c)
                    break
            else:
                groups.append([c])
        base = groups[0]
        best = max(groups, key=len)
        if len(best) <= len(base):
            if any(len(g) == len(base) for g in groups[1:]):
                warnings.warn(
                    f"autotune {getattr(self.fn, '__name__', 'kernel')!r}: with no "
                    f"reference=, the checked candidates disagree and no group of them is "
                    f"larger than the first candidate's ({base[0]}), which is taken as "
                    f"correct; pass reference= to check against known outputs",
                    RuntimeWarning, stacklevel=3)
            return self.records
        rep = self.outputs[best[0]]
        warnings.warn(
            f"autotune {getattr(self.fn, '__name__', 'kernel')!r}: with no reference=, the "
            f"first candidate ({base[0]}) was the baseline, but {len(best)} of "
            f"{len(self.outputs)} checked candidates agree with each other and not with it; "
            f"they are taken as correct and the {len(self.outputs) - len(best)} others marked "
            f"'wrong' (pass reference= to check against known outputs)",
            RuntimeWarning, stacklevel=3)
        members = set(best)
        for i, r in enumerate(self.records):
            if r.config not in self.outputs:
                continue
            if r.config in members and r.status == "wrong":
                self.records[i] = TuningRecord(r.config, "ok", float(r.metrics["time_s"]),
                                               None, r.metrics)
            elif r.config not in members and r.status == "ok":
                why = compare_outputs(self.outputs[r.config], rep, self.rtol, self.atol)
                self.records[i] = TuningRecord(
                    r.config, "wrong", reason=f"disagrees with the {len(best)} of "
                    f"{len(self.outputs)} candidates that agree: {why}", metrics=r.metrics)
        return self.records

    def _is_small_instance(self) -> bool:
        """Whether the check runs on other arrays than the real call's (a shrunk instance)."""
        assert self.check_args is not None
        return any(v is not self.real_args.get(k) for k, v in self.check_args.items()
                   if isinstance(v, np.ndarray))

    def _grid_reason(self, exc: BaseException, meta: Mapping[str, Any]) -> str | None:
        """Explain an out-of-bounds check launch caused by a grid sized for the real call."""
        if not isinstance(exc, OutOfBoundsError) or not self._is_small_instance():
            return None
        assert self.check_args is not None
        shapes = _shapes(self.check_args)
        if not callable(self.grid):
            return (f"interpreter raised {_err(exc)} on the small check instance ({shapes}): "
                    f"the grid {_grid_tuple(self.grid)} is a fixed tuple for the full problem; "
                    f"pass a callable grid that computes it from its META argument, e.g. "
                    f"lambda META: (triton.cdiv(META['n'], META['BLOCK']),)")
        try:
            small = _grid_tuple(self.grid({**self.check_args, **meta}))
            real = _grid_tuple(self.grid({**self.real_args, **meta}))
        except Exception:  # noqa: BLE001 - the launch error stays the reason
            return None
        if small != real:
            return None
        return (f"the grid callable must compute the grid from its META argument (got a grid "
                f"for the full problem while checking a small instance): it returned {small} "
                f"both for the real call and for the check instance ({shapes}), so it reads "
                f"the sizes from elsewhere (e.g. a closure over M and N); use META['M'], "
                f"META['N'], ... as in lambda META: (triton.cdiv(META['M'], META['BLOCK_M']) "
                f"* triton.cdiv(META['N'], META['BLOCK_N']),). The check launch raised "
                f"{_err(exc)}")

    def _run(self, config: LaunchConfig) -> tuple[dict[str, Any] | None, str | None]:
        """One hooked launch on the check instance: (outputs, None) or (None, reason).

        Every array of the check instance is restored afterwards, so each
        candidate starts from the call's own state: a kernel that updates an
        argument in place (``y += x``, an atomic sum) is checked correctly, and the
        caller's arrays (the check instance when they are small) are not changed by
        the tuning; only the final launch of the chosen config changes them.
        """
        assert self.check_args is not None
        orig = {k: v.copy() for k, v in self.check_args.items() if isinstance(v, np.ndarray)}
        try:
            return self._run_once(config)
        finally:
            for k, v in orig.items():
                np.copyto(self.check_args[k], v)

    def _run_once(self, config: LaunchConfig) -> tuple[dict[str, Any] | None, str | None]:
        assert self.check_args is not None
        meta = config.all_kwargs()
        launch = {k: v for k, v in self.check_args.items() if k not in meta}
        full = {**self.check_args, **meta}
        try:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self.pre_hook(full)
        except Exception as exc:  # noqa: BLE001
            return None, f"interpreter raised in pre_hook: {_err(exc)}"
        if self.reference is not None and self.expected is None:
            self.expected = reference_outputs(self.reference({**full, **snapshot(full)}))
        saved = {n: full[n].copy() for n in self.write_only or ()}
        for n in saved:
            poison(full[n])
        try:
            try:
                self.fn.run(grid=self.grid, **launch, **meta, **self.launch_options)
            except Exception as exc:  # noqa: BLE001 - out-of-bounds etc. score inf
                try:
                    self.post_hook(full, exception=exc)
                except Exception:  # noqa: BLE001, S110 - the kernel's error is the reason
                    pass
                hint = self._grid_reason(exc, meta)
                if hint is not None:
                    return None, f"interpreter raised on the check instance: {hint}"
                where = (f" (on the small check instance: {_shapes(self.check_args)})"
                         if self._is_small_instance() else "")
                return None, f"interpreter raised {_err(exc)}{where}"
            got = snapshot(full)
        finally:
            for n, v in saved.items():
                np.copyto(full[n], v)
        self.post_hook(full, exception=None)
        return got, None


class CandidateMeasurer(Measurer):
    """A :class:`Measurer` over space configs that delegates to an :class:`Evaluator`.

    Lets :func:`autotile.search.tune` drive the space form of ``@autotune``:
    each space config becomes a :class:`LaunchConfig` (``num_warps``,
    ``num_stages`` as launch options), is evaluated, and comes back as a
    :class:`MeasureResult` with ``time_s`` (a ``"wrong"`` candidate is
    ``"failed"``). :attr:`by_text` maps ``str(space config)`` to its record.
    """

    metrics = ("time_s",)
    objective = "time_s"

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self.by_text: dict[str, TuningRecord] = {}

    def _measure(self, config: Any) -> MeasureResult:
        rec = self.evaluator.evaluate(LaunchConfig.from_knobs(config))
        self.by_text[str(config)] = rec
        if rec.status == "ok":
            return MeasureResult(str(config), "ok", {"time_s": rec.time_s})
        if rec.status == "infeasible":
            return MeasureResult(str(config), "infeasible", {}, 0.0, rec.reason)
        return MeasureResult(str(config), "failed", {}, 0.0, f"{rec.status}: {rec.reason}")
