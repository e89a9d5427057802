from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autotile.measure import GroundTruth, ReplayMeasurer
from autotile.search._compare import ComparisonResult, compare
from autotile.search._report import format_table, result_to_dict, to_html
from autotile.space import Choice, Space


def random_fn(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
    order = np.random.default_rng(seed).permutation(len(space))[:budget]
    return [measurer.measure(space.config_at(int(i))).value(measurer.objective) for i in order]


def first_fails_fn(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
    return [math.inf] + random_fn(space, measurer, budget - 1, seed + 100)


@pytest.fixture(scope="module")
def result() -> ComparisonResult:
    space = Space([Choice("a", tuple(range(8))), Choice("b", tuple(range(8)))], name="tiny")
    rng = np.random.default_rng(1)
    cost = rng.uniform(1.0, 20.0, size=len(space))
    status = np.zeros(len(space), np.int8)
    status[5] = 1
    cost[5] = np.nan
    m = ReplayMeasurer(space, GroundTruth({"cost": cost}, status, {}), "cost")
    return compare(space, m, [("random", random_fn), ("first-fails", first_fails_fn)],
                   budget=12, seeds=5, progress=False)


def test_write_all_files(result: ComparisonResult, tmp_path: Path) -> None:
    paths = result.write(tmp_path / "out")
    assert set(paths) == {"txt", "csv", "curves_csv", "json", "png", "html"}
    for p in paths.values():
        assert Path(p).is_file() and Path(p).stat().st_size > 0
    assert Path(paths["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Path(paths["txt"]).read_text().rstrip("\n") == result.table()


def test_html_is_self_contained(result: ComparisonResult) -> None:
    page = to_html(result)
    assert page.startswith("<!DOCTYPE html>")
    assert 'src="data:image/png;base64,' in page
    for bad in ('src="http', "href=", "<script", "<link", "url("):
        assert bad not in page
    assert "random (expected)" in page and "first-fails" in page


def test_json_is_strict_and_complete(result: ComparisonResult, tmp_path: Path) -> None:
    paths = result.write(tmp_path)
    text = Path(paths["json"]).read_text()
    d = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert d == result_to_dict(result)
    assert d["settings"]["budget"] == 12 and d["settings"]["seeds"] == [0, 1, 2, 3, 4]
    assert len(d["random_curve"]) == 12
    assert set(d["curves"]) == {"random", "first-fails"}
    assert len(d["curves"]["random"]["median"]) == 12
    assert d["histories"]["first-fails"][0][0] is None  # inf -> null
    assert [r["searcher"] for r in d["summary"]] == ["random", "first-fails",
                                                     "random (expected)"]


def test_csv_files(result: ComparisonResult, tmp_path: Path) -> None:
    paths = result.write(tmp_path)
    with open(paths["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["searcher"] for r in rows] == ["random", "first-fails", "random (expected)"]
    assert float(rows[0]["mean_score"]) == pytest.approx(result.score("random"))
    with open(paths["curves_csv"]) as fh:
        curves = list(csv.DictReader(fh))
    assert len(curves) == 3 * 12
    med = [float(r["median"]) for r in curves if r["searcher"] == "random"]
    assert med == pytest.approx(result.curve("random")["median"].tolist())


def test_table_marks_misses(result: ComparisonResult) -> None:
    text = format_table(result)
    lines = text.splitlines()
    assert lines[0].startswith("space: tiny (64 configs, 63 valid)")
    assert any(line.startswith("first-fails") for line in lines)
    row = next(r for r in result.summary() if r["searcher"] == "random")
    if row["missed_opt"]:
        assert f"({row['missed_opt']} missed)" in text


def test_table_heads_read_at_a_glance(result: ComparisonResult) -> None:
    lines = result.table().splitlines()
    i = lines.index("") + 1  # the table follows the header lines
    assert lines[i:i + 3] == [
        "                          trials to optimum  final best  mean P(t)  seconds",
        "searcher           (= within 1% = 5% = 10%)    (median)    t <= 12  per run",
        "-----------------  ------------------------  ----------  ---------  -------"]
    assert lines[i + 3].startswith(
        "random                       >12 (4 missed)     3.20145     -0.182  ")
    assert lines[i + 4].startswith(
        "first-fails                   11 (2 missed)     1.13474     -0.053  ")
    # "(k missed)" in the cells, explained once, with no doubled parenthesis
    text = "\n".join(lines)
    assert "((" not in text and "miss)" not in text
    assert ('"(k missed)": k seeds never did (">budget" when that decides the median)'
            in " ".join(lines))
    # settings=False leaves out the lines that the plan printed before the run
    short = result.table(settings=False).splitlines()
    assert short == [ln for ln in lines if not ln.startswith(("space:", "objective:",
                                                              "budget:", "device:"))]
    assert short[0].startswith("random search needs (N+1)/(k+1) = ")
