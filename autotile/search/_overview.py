"""The summary of several comparisons (one per table), as text, Markdown and an index page."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING

from autotile.search._report import _CSS, _fmt_num, _fmt_score, _fmt_trials, _title, _unit

if TYPE_CHECKING:
    from autotile.search._comparison import ComparisonResult

__all__ = ["format_overview", "write_overview"]


def format_overview(results: dict[str, ComparisonResult], markdown: bool = False) -> str:
    """Return one summary of several comparisons (one per table): P and trials to the optimum.

    Parameters
    ----------
    results : dict of str to ComparisonResult
        Comparisons by table name, with the same searchers.
    markdown : bool, default=False
        Markdown tables instead of aligned text.

    Returns
    -------
    str
        Two tables, one row per table: mean P(t) over the methodology's
        budget per searcher, and median trials to the optimum per searcher
        (``(n)``: seeds that never got there), then what P means.
    """
    from autotile.search._compare_plan import P_MEANING

    first = next(iter(results.values()))
    searchers = list(first.searchers)

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        if markdown:
            return ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1),
                    *("| " + " | ".join(r) + " |" for r in rows)]
        widths = [max(len(head[j]), *(len(r[j]) for r in rows)) for j in range(len(head))]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                             for j, (c, w) in enumerate(zip(cells, widths)))
        return [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]

    def sizes(res: ComparisonResult) -> str:
        n_valid = "?" if res.values is None else str(int(res.values.shape[0]))
        return f"{res.meta.get('space_size')} ({n_valid} valid)"

    score_rows, trial_rows = [], []
    for name, res in results.items():
        rows = {r["searcher"]: r for r in res.summary()}
        opt = _fmt_num(res.optimum, 6) + _unit(res)
        score_rows.append([name, sizes(res), str(res.budget), opt,
                           *(_fmt_score(rows[s]["mean_score_mbudget"]) if s in rows else "-"
                             for s in searchers)])
        rnd = rows.get("random (expected)")
        trial_rows.append([name, str(res.budget),
                           *(_fmt_trials(rows[s], "trials_to_opt", res.budget)
                             if s in rows else "-" for s in searchers),
                           "-" if rnd is None else _fmt_trials(rnd, "trials_to_opt",
                                                               res.budget)])
    seeds = len(first.seeds)
    out = [f"Mean P(t) over the methodology budget ({seeds} seeds)", ""]
    out += table(["table", "configs", "budget", "optimum", *searchers], score_rows)
    out += ["", "Median trials to the optimum; \"(k missed)\": k seeds never reached it", ""]
    out += table(["table", "budget", *searchers, "random (expected)"], trial_rows)
    out += ["", P_MEANING + "."]
    return "\n".join(out)


def write_overview(results: dict[str, ComparisonResult],
                   outdir: str | os.PathLike[str]) -> dict[str, str]:
    """Write the summary of several comparisons next to their report folders.

    Parameters
    ----------
    results : dict of str to ComparisonResult
        Comparisons by table name; each report is in ``outdir/<name>/``.
    outdir : path-like
        The run folder.

    Returns
    -------
    dict of str to str
        ``"txt"`` (``summary.txt``), ``"md"`` (``summary.md``) and ``"html"``
        (``index.html``, linking each report).
    """
    out = Path(outdir)
    paths = {"txt": out / "summary.txt", "md": out / "summary.md", "html": out / "index.html"}
    paths["txt"].write_text(format_overview(results) + "\n", encoding="utf-8")
    paths["md"].write_text(format_overview(results, markdown=True) + "\n", encoding="utf-8")
    e = html.escape
    links = "".join(f'<li><a href="{e(name)}/report.html">{e(name)}</a>: '
                    f"{e(_title(res))}</li>" for name, res in results.items())
    paths["html"].write_text(
        f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>autotile compare: summary</title>
<style>{_CSS}</style></head><body><h1>autotile compare: {len(results)} tables</h1>
<ul>{links}</ul><pre>{e(format_overview(results))}</pre></body></html>
""", encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
