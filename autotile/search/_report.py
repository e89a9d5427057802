"""Render a :class:`ComparisonResult`: terminal table, CSV, JSON, PNG plot and one HTML page."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autotile.search._comparison import TOLERANCES_PCT, _pct_key

if TYPE_CHECKING:
    from autotile.search._comparison import ComparisonResult

__all__ = ["format_table", "format_markdown", "result_to_dict", "plot_curves", "to_html",
           "write_report"]

_DONE = {"minimize": "minimised", "maximize": "maximised"}
_COLUMNS = (("trials_to_opt", "to opt"), ("trials_to_1pct", "<=1%"),
            ("trials_to_5pct", "<=5%"), ("trials_to_10pct", "<=10%"))


def _jsonable(x: Any) -> Any:
    """Replace non-finite floats by ``None`` (strict JSON) and arrays by lists."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def _fmt_num(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def _fmt_trials(row: dict[str, Any], key: str, budget: int) -> str:
    t = row[key]
    missed = row.get(key.replace("trials_to_", "missed_"))
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "-"
    text = f">{budget}" if math.isinf(t) else (f"{t:.0f}" if float(t).is_integer() else
                                                f"{t:.1f}")
    if missed:
        text += f" ({missed} miss)"
    return text


def _fmt_score(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.3f}"


def _heads(res: ComparisonResult, long: bool) -> list[str]:
    mb = res.methodology_budget
    mb = None if mb is None else min(mb, res.budget)
    if long:
        trials = ["trials to optimum", "within 1%", "within 5%", "within 10%"]
        return ["searcher", *trials, "final best (median)", "mean P(t)",
                f"mean P(t), t<={mb}" if mb else "mean P(t), methodology", "wall time (s)"]
    return ["searcher", *[c for _, c in _COLUMNS], "final best", "mean P",
            f"P t<={mb}" if mb else "P mb", "time s"]


def _cells(res: ComparisonResult, r: dict[str, Any]) -> list[str]:
    wt = r["wall_time_s"]
    return [str(r["searcher"]), *[_fmt_trials(r, k, res.budget) for k, _ in _COLUMNS],
            _fmt_num(r["final_best_median"], 6), _fmt_score(r["mean_score"]),
            _fmt_score(r["mean_score_mbudget"]),
            "-" if wt is None or math.isnan(wt) else f"{wt:.1f}"]


def _header(res: ComparisonResult) -> list[str]:
    m = res.meta
    n_valid = None if res.values is None else int(res.values.shape[0])
    lines = [
        f"space: {m.get('space')} ({m.get('space_size')} configs"
        + (f", {n_valid} valid" if n_valid is not None else "") + ")",
        f"objective: {res.objective} ({_DONE[res.direction]}), optimum "
        f"{_fmt_num(res.optimum, 8)}"
        + (f", {res.n_within(0)} optimal configs" if res.values is not None else ""),
        f"budget: {res.budget} trials x {len(res.seeds)} seeds "
        f"(seeds {res.seeds[0]}..{res.seeds[-1]})",
    ]
    if res.values is not None:
        lines.append(
            "random search needs (N+1)/(k+1) = "
            f"{res.expected_random_trials(0):.1f} trials in expectation to hit the optimum "
            f"(median {res.expected_random_trials(0, median=True):.0f})")
    return lines


def format_table(res: ComparisonResult) -> str:
    """Return the summary as a plain-text table.

    Trial counts are medians over seeds; a seed that never reached the
    target counts as ``+inf`` (shown ``>budget`` when it decides the median)
    and ``(n miss)`` says how many seeds never did. ``mean P`` is the
    methodology score averaged over t = 1..budget.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.

    Returns
    -------
    str
        Header lines and an aligned table, no trailing newline.
    """
    head = _heads(res, long=False)
    body = [_cells(res, r) for r in res.summary()]
    widths = [max(len(head[j]), *(len(b[j]) for b in body)) for j in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths)))

    out = _header(res) + ["", line(head), "  ".join("-" * w for w in widths)]
    out += [line(b) for b in body]
    out.append("trials: median over seeds to reach the optimum / come within p% of it; "
               "final best: median; mean P: methodology score P(t) averaged over "
               "t=1..budget, and over the methodology's budget")
    return "\n".join(out)


def format_markdown(res: ComparisonResult) -> str:
    """Return the summary as a Markdown table (for ``benchmarks/RESULTS.md``).

    Parameters
    ----------
    res : ComparisonResult
        The comparison.

    Returns
    -------
    str
        A header row, a separator row and one row per searcher plus the random
        expectation; same cells as :func:`format_table`.
    """
    head = _heads(res, long=True)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cells(res, r)) + " |" for r in res.summary()]
    return "\n".join(lines)


def result_to_dict(res: ComparisonResult) -> dict[str, Any]:
    """Return settings, summary, curves and raw histories as a strict-JSON-able dict.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.

    Returns
    -------
    dict
        ``settings``, ``summary`` (see :meth:`ComparisonResult.summary`),
        ``random_curve`` (``f_random(t)``, t = 1..budget), ``curves`` (per
        searcher: ``median``, ``q25``, ``q75``, ``score``) and ``histories``
        (per searcher: objective per trial per seed). Non-finite numbers are
        ``null``.
    """
    curves = {}
    for name in res.searchers:
        c = res.curve(name)
        curves[name] = {**c, "score": res.score_curve(name)}
    settings = {
        "objective": res.objective, "direction": res.direction, "optimum": res.optimum,
        "budget": res.budget,
        "seeds": list(res.seeds), "searchers": list(res.searchers),
        "n_valid": None if res.values is None else int(res.values.shape[0]),
        "n_within": {_pct_key(p): res.n_within(p) for p in TOLERANCES_PCT},
        "tolerances_pct": list(TOLERANCES_PCT), **res.meta,
    }
    out = {"settings": settings, "summary": res.summary(), "random_curve": res.random_curve(),
           "curves": curves, "histories": {k: v for k, v in res.histories.items()}}
    d: dict[str, Any] = _jsonable(out)
    return d


def plot_curves(res: ComparisonResult, path: str | os.PathLike[str] | None = None,
                logx: bool = True) -> bytes:
    """Plot best-so-far (median and inter-quartile band) and ``P(t)`` per searcher.

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

    fig = Figure(figsize=(11, 4.6), dpi=110)
    ax, ax2 = fig.subplots(1, 2)
    t = np.arange(1, res.budget + 1)
    rc = res.random_curve()
    colors = [f"C{i}" for i in range(10)]
    for i, name in enumerate(res.searchers):
        c = res.curve(name)
        col = colors[i % len(colors)]
        ax.plot(t, c["median"], color=col, lw=1.6, label=name, drawstyle="steps-post")
        ax.fill_between(t, c["q25"], c["q75"], color=col, alpha=0.18, step="post")
        p = res.score_curve(name)
        if p is not None:
            ax2.plot(t, p, color=col, lw=1.4, label=name)
    if rc is not None:
        ax.plot(t, rc, color="k", ls="--", lw=1.2, label="random (expected)")
        ax2.axhline(0.0, color="k", ls="--", lw=1.0, label="random (expected)")
    ax.axhline(res.optimum, color="0.4", ls=":", lw=1.2, label="optimum")
    ax2.axhline(1.0, color="0.4", ls=":", lw=1.0, label="optimum")
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
    lows = [float(np.nanmin(p)) for n in res.searchers
            if (p := res.score_curve(n)) is not None and np.isfinite(p).any()]
    ax2.set_ylim(max(-2.0, min([-0.5, *lows])) - 0.05, 1.05)
    for a in (ax, ax2):
        if logx:
            a.set_xscale("log")
            # explicit limits: a panel with no finite data (e.g. P(t) when every config
            # is optimal) would otherwise leave the log axis without a positive range
            a.set_xlim(1, max(int(res.budget), 2))
        a.set_xlabel("trials")
        a.grid(True, alpha=0.3)
    ax.set_ylabel(f"best {res.objective} so far")
    ax.set_title("best so far: median and inter-quartile band over seeds")
    ax2.set_ylabel("P(t)")
    ax2.set_title("methodology score P(t) (mean over seeds)")
    ax.legend(fontsize=8, loc="lower right" if maximize else "upper right")
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.3em .7em;border-bottom:1px solid #ddd}
td{text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#f3f3f3}code{background:#f3f3f3;padding:0 .2em}
img{max-width:100%}.note{color:#555;font-size:.9em}
"""


def to_html(res: ComparisonResult, png: bytes | None = None) -> str:
    """Return one self-contained HTML page: settings, summary table and the plot.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.
    png : bytes, optional
        The plot (default: drawn by :func:`plot_curves`); embedded as base64.

    Returns
    -------
    str
        HTML without external assets (no scripts, styles or images by URL).
    """
    png = plot_curves(res) if png is None else png
    img = base64.b64encode(png).decode("ascii")
    e = html.escape
    head = _heads(res, long=True)
    trs = ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in _cells(res, r)) + "</tr>"
           for r in res.summary()]
    header = "".join(f"<li>{e(line)}</li>" for line in _header(res))
    within = "".join(
        f"<li>within {p:g}% of the optimum: {res.n_within(p)} configs"
        f" (random search: {res.expected_random_trials(p):.1f} trials expected, median "
        f"{res.expected_random_trials(p, median=True):.0f})</li>"
        for p in TOLERANCES_PCT if res.values is not None)
    title = f"autotile compare: {res.meta.get('space')} / {res.objective}"
    within_rule = ("value &ge; opt&middot;(1&minus;p/100), maximised"
                   if res.direction == "maximize" else "value &le; opt&middot;(1+p/100)")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{e(title)}</h1>
<ul>{header}{within}</ul>
<table><thead><tr>{''.join(f'<th>{e(h)}</th>' for h in head)}</tr></thead>
<tbody>{''.join(trs)}</tbody></table>
<p class="note">Trials: median over seeds of the trials needed to reach the optimum, or to
come within p% of it ({within_rule}); a seed that never got there counts as
+&infin; (&gt;budget when it decides the median) and <i>(n miss)</i> counts those seeds.
The last row is calculated for uniform random sampling without replacement: the median
number of trials to the first of k hits among N valid configs (the mean, (N+1)/(k+1), is
listed above). P(t) = (f<sub>random</sub>(t) &minus; f(t)) /
(f<sub>random</sub>(t) &minus; f<sub>opt</sub>), with f<sub>random</sub> the calculated
expected best-so-far of random sampling without replacement: 0 is as good as random,
1 is optimal (Willemsen, van Nieuwpoort &amp; van Werkhoven, FGCS 2024). Mean P averages
the seed-mean P(t) over t = 1..budget, and over the budget the methodology sets (the draws
random search needs in expectation to get 95% of the way from the median to the optimum,
+10%); past that budget f<sub>random</sub>(t) &minus; f<sub>opt</sub> is small and a single
run that misses the optimum moves P(t) a lot.</p>
<img alt="best-so-far curves and P(t)" src="data:image/png;base64,{img}">
</body></html>
"""


def write_report(res: ComparisonResult, outdir: str | os.PathLike[str]) -> dict[str, str]:
    """Write every report file of a comparison into one folder.

    The files are ``summary.txt`` (the terminal table), ``summary.csv``,
    ``curves.csv`` (median, quartiles and P(t) per trial), ``result.json``,
    ``curves.png`` and the self-contained ``report.html``.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.
    outdir : path-like
        Output folder, created if missing.

    Returns
    -------
    dict of str to str
        Paths by kind: ``txt``, ``csv``, ``curves_csv``, ``json``, ``png``, ``html``.
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"txt": out / "summary.txt", "csv": out / "summary.csv",
             "curves_csv": out / "curves.csv", "json": out / "result.json",
             "png": out / "curves.png", "html": out / "report.html"}
    paths["txt"].write_text(format_table(res) + "\n", encoding="utf-8")
    rows = res.summary()
    with open(paths["csv"], "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    rc = res.random_curve()
    with open(paths["curves_csv"], "w", newline="", encoding="utf-8") as fh:
        w2 = csv.writer(fh)
        w2.writerow(["searcher", "trial", "median", "q25", "q75", "score"])
        for name in res.searchers:
            c = res.curve(name)
            p = res.score_curve(name)
            for i in range(res.budget):
                w2.writerow([name, i + 1, repr(float(c["median"][i])), repr(float(c["q25"][i])),
                             repr(float(c["q75"][i])), "" if p is None else repr(float(p[i]))])
        if rc is not None:
            for i in range(res.budget):
                v = repr(float(rc[i]))
                w2.writerow(["random (expected)", i + 1, v, v, v, "0.0"])
    paths["json"].write_text(json.dumps(result_to_dict(res), allow_nan=False), encoding="utf-8")
    png = plot_curves(res, paths["png"])
    paths["html"].write_text(to_html(res, png), encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
