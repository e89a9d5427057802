"""The convergence plot of a :class:`ComparisonResult`: best so far and P(t) over trials."""

from __future__ import annotations

import io
import os
import textwrap
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autotile.search._report import _mbudget, _title, _unit

if TYPE_CHECKING:
    from autotile.search._comparison import ComparisonResult

__all__ = ["plot_curves"]

_P_FLOOR = -2.0  # the P(t) panel's lower limit; lower values are clipped and said so


def plot_curves(res: ComparisonResult, path: str | os.PathLike[str] | None = None,
                logx: bool = True) -> bytes:
    """Plot best-so-far and ``P(t)`` per searcher: median over seeds and inter-quartile band.

    The left panel shows the best value so far, the right one the
    methodology score P(t) (1 = optimum, 0 = random search), both as the
    median over seeds with the band between the 25th and 75th percentiles.
    The methodology's budget is shaded on both, and P(t) values below -2
    are clipped at the axis with a note naming the searchers clipped.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.
    path : path-like, optional
        Where to write the PNG.
    logx : bool, default=True
        Logarithmic trial axis.

    Returns
    -------
    bytes
        The PNG.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 5.0), dpi=110)
    ax, ax2 = fig.subplots(1, 2)
    t = np.arange(1, res.budget + 1)
    rc = res.random_curve()
    mb = _mbudget(res)
    colors = [f"C{i}" for i in range(10)]
    clipped: list[str] = []
    for i, name in enumerate(res.searchers):
        c = res.curve(name)
        col = colors[i % len(colors)]
        ax.plot(t, c["median"], color=col, lw=1.6, label=name, drawstyle="steps-post")
        ax.fill_between(t, c["q25"], c["q75"], color=col, alpha=0.18, step="post")
        p = res.score_runs(name)
        if p is not None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                q25, med, q75 = np.nanpercentile(p, [25, 50, 75], axis=0)
            ax2.plot(t, med, color=col, lw=1.4, label=name)
            ax2.fill_between(t, q25, q75, color=col, alpha=0.15)
            low = np.nanmin(q25) if np.isfinite(q25).any() else 0.0
            if low < _P_FLOOR:
                clipped.append(f"{name} (min {low:.3g})")
    if rc is not None:
        ax.plot(t, rc, color="k", ls="--", lw=1.2, label="random (expected)")
        ax2.axhline(0.0, color="k", ls="--", lw=1.0, label="random (expected): 0")
    ax.axhline(res.optimum, color="0.4", ls=":", lw=1.2, label="optimum")
    ax2.axhline(1.0, color="0.4", ls=":", lw=1.0, label="optimum: 1")
    # y range: from just past the optimum to the first trial's typical value; a log
    # axis when that spans more than a factor of 10 from a positive optimum
    maximize = res.direction == "maximize"
    firsts = [float(res.curve(n)["q25" if maximize else "q75"][0]) for n in res.searchers]
    if rc is not None:
        firsts.append(float(rc[0]))
    finite = [x for x in firsts if np.isfinite(x)]
    if maximize:
        low = float(np.nanmin(finite or [res.optimum - 1.0]))
        if low > 0 and res.optimum > 10 * low:
            ax.set_yscale("log")
            ax.set_ylim(low / 1.1, res.optimum * 1.1)
        else:
            span = max(res.optimum - low, abs(res.optimum) * 1e-3, 1e-12)
            ax.set_ylim(low - 0.03 * span, res.optimum + 0.03 * span)
    else:
        top = float(np.nanmax(finite or [res.optimum + 1.0]))
        if res.optimum > 0 and top > 10 * res.optimum:
            ax.set_yscale("log")
            ax.set_ylim(res.optimum / 1.1, top * 1.1)
        else:
            span = max(top - res.optimum, abs(res.optimum) * 1e-3, 1e-12)
            ax.set_ylim(res.optimum - 0.03 * span, top + 0.03 * span)
    ax2.set_ylim(_P_FLOOR - 0.05, 1.05)
    for a in (ax, ax2):
        if logx:
            a.set_xscale("log")
            # explicit limits: a panel with no finite data (e.g. P(t) when every config
            # is optimal) would otherwise leave the log axis without a positive range
            a.set_xlim(1, max(int(res.budget), 2))
        if mb:
            a.axvspan(1, mb, color="0.9", alpha=0.6, lw=0,
                      label=f"methodology budget (t <= {mb})" if a is ax2 else None)
        a.set_xlabel("trials")
        a.grid(True, alpha=0.3)
    ax.set_ylabel(f"best {res.objective} so far{_unit(res)}")
    ax.set_title("best so far: median and inter-quartile band over seeds", fontsize=10)
    ax2.set_ylabel("P(t)  (1 = optimum, 0 = random search)")
    ax2.set_title("methodology score P(t): median and inter-quartile band over seeds",
                  fontsize=10)
    if clipped:  # under the axis, where no legend covers it
        note = textwrap.fill(f"(P below {_P_FLOOR:g} not shown: " + ", ".join(clipped) + ")",
                             75)
        ax2.set_xlabel("trials\n" + note, fontsize=9)
    ax.legend(fontsize=8, loc="lower right" if maximize else "upper right")
    ax2.legend(fontsize=8, loc="lower left")
    fig.suptitle(_title(res), fontsize=11)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png
