"""Render a :class:`ComparisonResult`: terminal table, CSV, JSON, PNG plot and one HTML page."""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autotile.search._comparison import TOLERANCES_PCT, _pct_key

if TYPE_CHECKING:
    from autotile.search._comparison import ComparisonResult

__all__ = ["format_table", "format_markdown", "result_to_dict", "plot_curves", "to_html",
           "write_report"]

_DONE = {"minimize": "minimised", "maximize": "maximised"}


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
        text += f" ({missed} missed)"
    return text


def _fmt_score(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.3f}"


def _group_head(group: tuple[float, ...]) -> tuple[str, str]:
    """The two header lines of a trials column.

    ``("trials to", "optimum")``, or with the tolerances whose targets hold the
    same configs, ``("trials to within", "5% (= 10%)")``.
    """
    same = " = ".join(f"{p:g}%" for p in group[1:])
    if group[0] == 0:
        return ("trials to", "optimum") if not same else ("trials to optimum",
                                                           f"(= within {same})")
    first = f"{group[0]:g}%"
    return ("trials to", f"within {first}") if not same else ("trials to within",
                                                               f"{first} (= {same})")


def _mbudget(res: ComparisonResult) -> int | None:
    mb = res.methodology_budget
    return None if mb is None else min(mb, res.budget)


def _two_scores(res: ComparisonResult) -> bool:
    """Whether the methodology's budget is shorter than the run (two P columns)."""
    mb = _mbudget(res)
    return mb is not None and mb < res.budget


def _heads2(res: ComparisonResult) -> list[tuple[str, str]]:
    """Column heads in two lines each (the terminal table)."""
    mb = _mbudget(res)
    trials = [_group_head(g) for g in res.threshold_groups()]
    scores = ([("mean P(t)", f"t <= {mb}")] if _two_scores(res) else []) + [
        ("mean P(t)", f"t <= {res.budget}")]
    return [("", "searcher"), *trials, ("final best", "(median)"), *scores,
            ("seconds", "per run")]


def _heads(res: ComparisonResult) -> list[str]:
    """Column heads in one line each (Markdown and HTML tables)."""
    mb = _mbudget(res)
    trials = [" ".join(_group_head(g)) for g in res.threshold_groups()]
    scores = ([f"mean P(t), t <= {mb} (methodology)"] if _two_scores(res) else []) + [
        f"mean P(t), t <= {res.budget}"]
    return ["searcher", *trials, "final best (median)", *scores, "seconds per run (median)"]


def _cells(res: ComparisonResult, r: dict[str, Any]) -> list[str]:
    wt = r["run_time_s"]
    trials = [_fmt_trials(r, f"trials_to_{_pct_key(g[0])}", res.budget)
              for g in res.threshold_groups()]
    scores = ([_fmt_score(r["mean_score_mbudget"])] if _two_scores(res) else []) + [
        _fmt_score(r["mean_score"])]
    return [str(r["searcher"]), *trials, _fmt_num(r["final_best_median"], 6), *scores,
            "-" if wt is None or math.isnan(wt) else f"{wt:.1f}"]


def _unit(res: ComparisonResult) -> str:
    unit = res.meta.get("unit")
    return f" {unit}" if unit else ""


def _seeds_text(seeds: tuple[int, ...]) -> str:
    if seeds == tuple(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}..{seeds[-1]}"
    return "seeds " + ", ".join(str(s) for s in seeds)


def _header(res: ComparisonResult) -> list[str]:
    """:func:`_settings_lines` then :func:`_outcome_lines`."""
    return _settings_lines(res) + _outcome_lines(res)


def _settings_lines(res: ComparisonResult) -> list[str]:
    """Space, device, objective and budget: what the plan printed before the first trial."""
    m = res.meta
    n_valid = None if res.values is None else int(res.values.shape[0])
    size = m.get("space_size")
    space = (f"space: {m.get('space')} ({size} configs"
             + ("" if n_valid is None else f", {n_valid} valid of {m['n_sampled']} sampled"
                if m.get("n_sampled") else f", {n_valid} valid") + ")")
    if m.get("source"):
        space += (", " if m.get("live") else ", replayed from ") + m["source"]
    lines = [space]
    if m.get("device"):
        lines.append(f"device: {m['device']}")
    unit = m.get("unit")
    lines.append(
        f"objective: {res.objective}" + (f" in {unit}" if unit else "")
        + f" ({_DONE[res.direction]}), {m.get('optimum_label', 'optimum')} "
        + _fmt_num(res.optimum, 8)
        + ("" if res.values is None else f", {res.n_within(0)} sampled configs at it"
           if m.get("optimum_label") else f", {res.n_within(0)} optimal configs"))
    lines.append(f"budget: {res.budget} trials x {len(res.seeds)} seeds "
                 f"({_seeds_text(res.seeds)}) per searcher")
    return lines


def _outcome_lines(res: ComparisonResult) -> list[str]:
    """The random-search expectation and the wall time."""
    m = res.meta
    lines = []
    if res.values is not None:
        lines.append(
            "random search needs (N+1)/(k+1) = "
            f"{res.expected_random_trials(0):.1f} trials in expectation to hit the "
            + ("best known (estimated from the sample) " if m.get("n_sampled") else "optimum ")
            + f"(median {res.expected_random_trials(0, median=True):.0f})")
    wall = m.get("wall_time_s")
    if wall is not None:
        workers = m.get("n_workers")
        text = f"wall time: {wall:.1f} s" + (f" on {workers} worker"
                                             f"{'s' if workers != 1 else ''}" if workers else "")
        if m.get("n_stored"):
            text += f" ({m['n_stored']} runs loaded from the storage)"
        lines.append(text)
    return lines


def _best_lines(res: ComparisonResult) -> list[str]:
    """One line per searcher: the best config it found over its seeds, with value and unit."""
    rows = [r for r in res.summary() if r["n_seeds"] is not None]
    cells = []
    for r in rows:
        opt = (", optimal" if res.values is not None and r["best_value"] is not None
               and math.isfinite(r["best_value"])
               and res.sign * r["best_value"] <= res.sign * res.optimum else "")
        cells.append([str(r["searcher"]), _fmt_num(r["best_value"], 8) + _unit(res),
                      f"{r['n_seeds_best']} of {r['n_seeds']} seeds{opt}",
                      r["best_config"] or "-"])
    widths = [max(len(c[j]) for c in cells) for j in range(3)]
    out = [f"best config found by each searcher (over its {len(res.seeds)} seeds):"]
    for c in cells:
        out.append(f"  {c[0].ljust(widths[0])}  {c[1].rjust(widths[1])}  "
                   f"{c[2].ljust(widths[2])}  {c[3]}")
    return out


def _notes(res: ComparisonResult) -> list[str]:
    from autotile.search._compare_plan import P_MEANING

    mb = _mbudget(res)
    groups = [g for g in res.threshold_groups() if len(g) > 1]
    out = ["Trials to optimum / to within p%: the median over seeds of the trials a run "
           "took to reach the optimum / a value within p% of it; \"(k missed)\": k seeds "
           "never did (\">budget\" when that decides the median). Final best: the median "
           "over seeds of each run's best value."]
    if groups:
        out.append("\"(= within 1%)\" and the like: the targets hold the same configs (every "
                   "config within 1% of the optimum is optimal, say), so the trial counts "
                   "are equal.")
    out.append(P_MEANING + ".")
    out.append(f"Mean P(t), t <= {mb}: P(t) averaged over the methodology's budget (beyond "
               f"it random search is close to the optimum, so one unlucky seed moves P a "
               f"lot); t <= {res.budget}: over the whole budget." if _two_scores(res) else
               f"Mean P(t), t <= {res.budget}: P(t) averaged over the whole budget"
               + (" (the methodology's budget)." if mb == res.budget else "."))
    out.append("Seconds per run: the median seconds of one run in its worker (runs go in "
               "parallel; the comparison's wall time is above).")
    return [w for line in out for w in textwrap.wrap(line, 100)]


def format_table(res: ComparisonResult, settings: bool = True) -> str:
    """Return the summary as a plain-text table, the best configs and what the columns mean.

    Trial counts are medians over seeds; a seed that never reached the
    target counts as ``+inf`` (shown ``>budget`` when it decides the median)
    and ``(k missed)`` says how many seeds never did. Tolerances whose
    targets hold the same configs share a column (``trials to optimum (=
    within 1%)``). The ``mean P(t)`` columns are the methodology score
    averaged over the methodology's budget and over the whole budget; the
    notes under the table say what P means. Column heads take two lines.

    Parameters
    ----------
    res : ComparisonResult
        The comparison.
    settings : bool, default=True
        Start with the space, device, objective and budget lines. ``False``
        leaves them out, for a caller that printed the plan's header
        (:meth:`~autotile.search._compare_plan.ComparisonPlan.header`) before
        the run; the random-search expectation and the wall time stay.

    Returns
    -------
    str
        Header lines, an aligned table, the best config of each searcher
        and notes, no trailing newline.
    """
    heads = _heads2(res)
    body = [_cells(res, r) for r in res.summary()]
    widths = [max(len(heads[j][0]), len(heads[j][1]), *(len(b[j]) for b in body))
              for j in range(len(heads))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths))).rstrip()

    top = (_header(res) if settings else _outcome_lines(res)) + [""]
    out = top + [line([h[0] for h in heads]), line([h[1] for h in heads]),
                 "  ".join("-" * w for w in widths)]
    out += [line(b) for b in body]
    out += [""] + _best_lines(res) + [""] + _notes(res)
    return "\n".join(out)


def format_markdown(res: ComparisonResult) -> str:
    """Return the summary as a Markdown table (for ``docs/results.md``).

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
    head = _heads(res)
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
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
        searcher: ``median``, ``q25``, ``q75``, ``score``), ``histories``
        (per searcher: objective per trial per seed), ``best_configs`` (per
        searcher: each seed's best config) and ``run_time_s`` (per searcher:
        seconds of each run). Non-finite numbers are
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
        "n_within": None if res.values is None else {
            _pct_key(p): res.n_within(p) for p in TOLERANCES_PCT},
        "tolerances_pct": list(TOLERANCES_PCT),
        "methodology_budget": res.methodology_budget, **res.meta,
    }
    out = {"settings": settings, "summary": res.summary(), "random_curve": res.random_curve(),
           "curves": curves, "histories": {k: v for k, v in res.histories.items()},
           "best_configs": {k: list(v) for k, v in res.best_configs.items()},
           "run_time_s": {k: v for k, v in res.run_time_s.items()}}
    d: dict[str, Any] = _jsonable(out)
    return d


def _title(res: ComparisonResult) -> str:
    device = res.meta.get("device")
    return (f"{res.meta.get('space')}" + (f" on {device}" if device else "")
            + f": {res.objective}{_unit(res)}, {len(res.seeds)} seeds x {res.budget} trials")


def plot_curves(res: ComparisonResult, path: str | os.PathLike[str] | None = None,
                logx: bool = True) -> bytes:
    """Plot best-so-far and ``P(t)`` per searcher (see :func:`autotile.search._plot.plot_curves`).

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
    from autotile.search._plot import plot_curves as plot

    return plot(res, path, logx)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.3em .7em;border-bottom:1px solid #ddd}
td{text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#f3f3f3}code{background:#f3f3f3;padding:0 .2em}
img{max-width:100%}.note{color:#555;font-size:.9em}td.cfg{text-align:left}
"""


def to_html(res: ComparisonResult, png: bytes | None = None) -> str:
    """Return one self-contained HTML page: settings, summary, best configs and the plot.

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
    from autotile.search._compare_plan import P_MEANING

    png = plot_curves(res) if png is None else png
    img = base64.b64encode(png).decode("ascii")
    e = html.escape
    head = _heads(res)
    rows = res.summary()
    trs = ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in _cells(res, r)) + "</tr>"
           for r in rows]
    header = "".join(f"<li>{e(line)}</li>" for line in _header(res))
    within = "".join(
        f"<li>within {p:g}% of the optimum: {res.n_within(p)} configs"
        f" (random search: {res.expected_random_trials(p):.1f} trials expected, median "
        f"{res.expected_random_trials(p, median=True):.0f})</li>"
        for p in TOLERANCES_PCT if res.values is not None)
    best = "".join(
        f"<tr><td>{e(str(r['searcher']))}</td><td>{e(_fmt_num(r['best_value'], 8))}"
        f"{e(_unit(res))}</td><td>{r['n_seeds_best']} of {r['n_seeds']}</td>"
        f"<td class='cfg'><code>{e(r['best_config'] or '-')}</code></td></tr>"
        for r in rows if r["n_seeds"] is not None)
    title = f"autotile compare: {_title(res)}"
    within_rule = ("value &ge; opt&middot;(1&minus;p/100), maximised"
                   if res.direction == "maximize" else "value &le; opt&middot;(1+p/100)")
    notes = " ".join(e(n) for n in _notes(res))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{e(title)}</h1>
<ul>{header}{within}</ul>
<p class="p"><b>{e(P_MEANING)}</b></p>
<table><thead><tr>{''.join(f'<th>{e(h)}</th>' for h in head)}</tr></thead>
<tbody>{''.join(trs)}</tbody></table>
<h2>Best config found by each searcher</h2>
<table><thead><tr><th>searcher</th><th>best {e(res.objective)}</th><th>seeds that found it</th>
<th>config</th></tr></thead><tbody>{best}</tbody></table>
<p class="note">{notes} Trials: median over seeds of the trials needed to reach the optimum,
or to come within p% of it ({within_rule}); a seed that never got there counts as
+&infin; (&gt;budget when it decides the median). The last row is calculated for uniform
random sampling without replacement: the median number of trials to the first of k hits
among N valid configs (the mean, (N+1)/(k+1), is listed above). P(t) =
(f<sub>random</sub>(t) &minus; f(t)) / (f<sub>random</sub>(t) &minus; f<sub>opt</sub>),
with f<sub>random</sub> the calculated expected best-so-far of random sampling without
replacement (Willemsen, van Nieuwpoort &amp; van Werkhoven, FGCS 2024); the methodology's
budget is the number of draws random search needs in expectation to get 95% of the way from
the median to the optimum, +10%.</p>
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

