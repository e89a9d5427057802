"""Problems a fresh-user trial found (session 9): each now a clear error or the right behaviour."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
import pytest

from autotile.__main__ import main
from autotile.errors import SchedulerConnectionError
from autotile.search import compare, open_storage, tune
from autotile.search._cli import compare_main

from .conftest import ToyMeasurer, _small_constrained

DATA = Path(__file__).resolve().parents[1] / "data"
KT = ["--kernel-tuner", str(DATA / "kt_tiny.json"), "--no-progress"]


def _toy_optimum() -> float:
    space = _small_constrained()
    m = ToyMeasurer(space)
    return min(m.measure(c).metrics["cost"] for c in space)


# -- 1. compare(optimum=...) without a ground-truth table ---------------------------------
def test_given_optimum_without_table_is_used_and_labelled() -> None:
    space = _small_constrained()
    best = _toy_optimum()
    res = compare(space, ToyMeasurer(space), ["grid"], budget=len(space), seeds=1,
                  optimum=best, progress=False)
    assert res.optimum == best
    row = res.summary()[0]
    assert row["final_best_median"] == best and row["missed_opt"] == 0
    assert "optimum (given, no table) " in res.table()
    d = res.to_dict()["settings"]
    assert d["n_within"] is None and d["n_valid"] is None  # no table: no counts, not 0


def test_given_optimum_beaten_by_a_run_raises_naming_it() -> None:
    space = _small_constrained()
    best = _toy_optimum()
    wrong = best + 100.0
    with pytest.raises(ValueError) as info:
        compare(space, ToyMeasurer(space), ["grid"], budget=len(space), seeds=1,
                optimum=wrong, progress=False)
    msg = str(info.value)
    assert f"optimum={wrong!r} is not the optimum of cost (minimized)" in msg
    assert f"searcher 'grid' (seed 0) found cost={best!r} < {wrong!r}" in msg


def test_given_bound_below_every_value_counts_as_never_reached() -> None:
    space = _small_constrained()
    res = compare(space, ToyMeasurer(space), ["random"], budget=5, seeds=2, optimum=-1.0,
                  progress=False)
    assert res.summary()[0]["missed_opt"] == 2


# -- 2. --scheduler that does not answer -------------------------------------------------
def test_scheduler_connection_failure_names_the_address(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    addr = "tcp://127.0.0.1:1"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        rc = compare_main([*KT, "--searchers", "random", "--seeds", "1", "--budget", "3",
                           "--out", str(tmp_path / "r"), "--scheduler", addr])
    err = capsys.readouterr().err
    assert rc == 1
    assert (f"autotile compare: error: --scheduler: could not connect to the Dask scheduler "
            f"at {addr!r}") in err
    assert "could not write the report" not in err
    assert issubclass(SchedulerConnectionError, ConnectionError)


# -- 3. an --out nothing can be written in -----------------------------------------------
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_out_in_proc_is_refused_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main([*KT, "--out", "/proc/x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autotile compare: error: --out '/proc/x' cannot be written: no "
                          "file can be created in '/proc'"), err
    assert err.count("\n") == 1
    assert main(["sweep", "--n", "4", "--out", "/proc/x.npz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autotile sweep: error: --out '/proc/x.npz' cannot be written"), err


# -- 4. a rerun after a failure that stored nothing --------------------------------------
def test_rerun_after_a_failure_says_nothing_was_stored(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    out = str(tmp_path / "r")
    argv = [*KT, "--searchers", "random", "--seeds", "2", "--budget", "3", "--out", out]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert compare_main([*argv, "--scheduler", "tcp://127.0.0.1:1"]) == 1
    capsys.readouterr()
    assert compare_main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (f"run folder: {out} (an earlier run with these settings stopped here "
                     f"before any run was stored: every run starts afresh)")
    assert "resuming" not in first


def test_rerun_after_interrupt_counts_the_stored_runs(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    import json

    out = tmp_path / "r"
    argv = [*KT, "--searchers", "random", "--seeds", "2", "--budget", "3", "--out", str(out)]
    assert compare_main(argv) == 0
    record = json.loads((out / "run.json").read_text())
    record["status"] = "running"  # as if killed after both runs were stored
    (out / "run.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert compare_main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (f"run folder: {out} (resuming an interrupted run: 2 finished runs are "
                     f"stored and will be loaded, the rest run)")


# -- 5. autotile worker on a file that does not exist ------------------------------------
@pytest.mark.parametrize("form", ["{p}.db", "sqlite:///{p}.db", "{p}.log", "journal://{p}.log"])
def test_worker_on_a_missing_file_creates_nothing(form: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    p = str(tmp_path / "missing")
    arg = form.format(p=p)
    assert main(["worker", "--storage", arg]) == 2
    err = capsys.readouterr().err
    suffix = ".db" if ".db" in form else ".log"
    assert err.startswith(f"autotile worker: error: --storage {arg!r}: no such file "
                          f"{p + suffix!r}"), err
    assert list(tmp_path.iterdir()) == []


def test_worker_on_an_empty_storage_says_so(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "empty.db")
    open_storage(db)  # an SQLite file with Optuna's tables and no study
    assert main(["worker", "--storage", db]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"autotile worker: error: {db} holds no study; start one with "
                          f"`autotile tune --storage {db} ...`"), err


# -- 6. Kernel Tuner / table study names include the file's name -------------------------
def test_kernel_tuner_default_study_name_has_the_file_stem(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    a = tmp_path / "pnpoly__A.json.gz"
    b = tmp_path / "pnpoly__B.json.gz"
    src = (DATA / "pnpoly__RTX_3090.json.gz").read_bytes()
    a.write_bytes(src)
    b.write_bytes(src)
    db = str(tmp_path / "runs.db")
    for f in (a, b):
        assert main(["tune", "--kernel-tuner", str(f), "--searcher", "random", "--budget", "2",
                     "--storage", db, "--no-progress"]) == 0
    capsys.readouterr()
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(open_storage(db)))
    assert names == ["pnpoly__A-cn_pnpoly-random-time-seed0",
                     "pnpoly__B-cn_pnpoly-random-time-seed0"]


# -- 7. a smaller budget than the study already ran --------------------------------------
def test_resume_with_smaller_budget_says_nothing_to_run(tmp_path: Path) -> None:
    space = _small_constrained()
    db = str(tmp_path / "s.db")
    tune(space, ToyMeasurer(space), searcher="random", budget=6, storage=db, progress=False)
    with pytest.warns(UserWarning, match=r"already holds 6 finished trials >= n_trials=4: "
                                         r"nothing to run"):
        study = tune(space, ToyMeasurer(space), searcher="random", budget=4, storage=db,
                     progress=False)
    assert len(study) == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a larger budget runs without the warning
        assert len(tune(space, ToyMeasurer(space), searcher="random", budget=8, storage=db,
                        progress=False)) == 8


def test_cli_rerun_with_smaller_budget_says_nothing_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    base = ["tune", "--n", "4", "--measurer", "live", "--searcher", "random", "--storage", db,
            "--no-progress"]
    assert main([*base, "--budget", "5"]) == 0
    capsys.readouterr()
    assert main([*base, "--budget", "3"]) == 0
    out = capsys.readouterr().out
    assert ("the study already holds 5 finished trials >= its budget 3: nothing to run "
            "(pass --budget > 5 to run more)") in out
    assert "of 3 trials finished" not in out
    assert main([*base, "--budget", "7"]) == 0  # raises the workers' budget too
    spec = optuna.load_study(study_name="gemm_n4-random-misses-seed0",
                             storage=open_storage(db)).user_attrs["autotile:cli"]
    assert spec["budget"] == 7
    assert "7 of 7 trials finished" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_study_name_is_refused(name: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    space = _small_constrained()
    with pytest.raises(ValueError, match="study_name must be a non-empty str or None, got "
                                         f"study_name={name!r}"):
        tune(space, ToyMeasurer(space), budget=2, storage=":memory:", study_name=name,
             progress=False)
    db = str(tmp_path / "s.db")
    assert main(["tune", "--n", "4", "--measurer", "live", "--budget", "2", "--storage", db,
                 "--study-name", name, "--no-progress"]) == 2
    assert f"study_name={name!r}" in capsys.readouterr().err


# -- more bad input found by the same trial ----------------------------------------------
def test_empty_out_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main([*KT, "--out", ""]) == 2
    assert capsys.readouterr().err == (
        "autotile compare: error: --out must name a folder, got --out '' (leave it out for "
        "a new folder under autotile-results/compare/)\n")
    assert main(["sweep", "--n", "4", "--out", " "]) == 2
    assert capsys.readouterr().err.startswith(
        "autotile sweep: error: --out must name an .npz file, got --out ' '")


def test_kernel_tuner_file_given_as_table_says_where_it_goes(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "kt_tiny.json")
    assert compare_main(["--table", path, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "not a NumPy .npz archive: it starts with b'{" in err
    assert "allow_pickle" not in err
    assert err.rstrip().endswith("a Kernel Tuner cache or T4 file (JSON, or gzip) goes to "
                                 "--kernel-tuner")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("storage", ["/proc/x.db", "/proc/x.log"])
def test_unwritable_storage_is_refused_before_the_run_folder(
        storage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    assert compare_main([*KT, "--storage", storage, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autotile compare: error: --storage: study "), err
    assert "cannot be opened or created" in err and repr(storage) in err
    assert not out.exists()
    space = _small_constrained()
    with pytest.raises(ValueError, match="cannot be opened or created"):
        tune(space, ToyMeasurer(space), budget=1, storage=storage, progress=False)


def test_interrupted_run_with_another_storage_names_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "r"
    argv = [*KT, "--searchers", "random", "--seeds", "1", "--budget", "2", "--out", str(out)]
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    assert compare_main([*argv, "--storage", a]) == 0
    record = json.loads((out / "run.json").read_text())
    record["status"] = "running"
    (out / "run.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert compare_main([*argv, "--storage", b]) == 2
    assert (f"holds an interrupted run stored in {a!r}, not in --storage {b!r}"
            in capsys.readouterr().err)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_python_sweep_into_proc_raises_before_measuring() -> None:
    from autotile.errors import MeasureError
    from autotile.measure import sweep

    space = _small_constrained()
    m = ToyMeasurer(space)
    with pytest.raises(MeasureError, match=r"cannot write the table '/proc/x\.npz': no file "
                                           r"can be created in '/proc'"):
        sweep(space, m, "/proc/x.npz")
    assert m.calls == []


def test_python_default_study_name_of_a_kernel_tuner_file_has_its_stem(tmp_path: Path) -> None:
    from autotile.measure import load_kernel_tuner

    src = (DATA / "pnpoly__RTX_3090.json.gz").read_bytes()
    db = str(tmp_path / "runs.db")
    names = []
    for stem in ("pnpoly__A", "pnpoly__B"):
        f = tmp_path / f"{stem}.json.gz"
        f.write_bytes(src)
        rec = load_kernel_tuner(f)
        names.append(tune(rec.space, rec.measurer(), searcher="random", budget=2, seed=0,
                          storage=db, progress=False).study_name)
    assert names == ["pnpoly__A-cn_pnpoly-random-time-seed0",
                     "pnpoly__B-cn_pnpoly-random-time-seed0"]


@pytest.mark.parametrize("name", ["model", "bandit", "random", "tpe", "nsga2"])
def test_unknown_searcher_option_names_it_and_the_known_ones(name):
    from autotile.search import make_searcher
    from autotile.space import gemm_space

    with pytest.raises(TypeError, match=rf"searcher '{name}' has no option\(s\) \['plan_sise'\]; "
                                        r"its options are \["):
        make_searcher(name, gemm_space(64), seed=0, plan_sise=8)


def test_known_searcher_options_still_pass():
    from autotile.search import make_searcher
    from autotile.space import gemm_space

    s = make_searcher("model", gemm_space(64), seed=0, plan_size=8)
    assert s.plan_size == 8


def test_tune_cli_errors_name_the_flags(capsys):
    from autotile.search._cli_tune import tune_main

    assert tune_main(["--space", "gemm", "--seed", "-1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("autotile tune: error: --seed must be an int with 0 <= seed < 2**32, "
                   "got --seed -1")
    assert tune_main(["--space", "gemm", "--objective", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotile tune: error: --objective must be one of (")
    assert err.endswith("got 'nope'")


def test_tune_cli_heartbeat_errors_name_the_flags(capsys, tmp_path):
    from autotile.search._cli_tune import tune_main

    db = str(tmp_path / "s.db")
    assert tune_main(["--storage", db, "--heartbeat-interval", "0", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        "autotile tune: error: --heartbeat-interval must be an int >= 1 (seconds), "
        "got --heartbeat-interval 0")
    assert tune_main(["--storage", db, "--grace-period", "0", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        "autotile tune: error: --grace-period must be an int >= 1 (seconds), "
        "got --grace-period 0")
    assert tune_main(["--storage", db, "--heartbeat-interval", "30", "--grace-period", "10",
                      "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        "autotile tune: error: --grace-period must be longer than --heartbeat-interval, "
        "got --grace-period 10 <= --heartbeat-interval 30: live trials would be failed "
        "as abandoned")


@pytest.mark.parametrize("name,opts,msg", [
    ("tpe", {"n_startup_trials": "four"},
     r"searcher 'tpe' option n_startup_trials='four': expected int \(its default is 10\), "
     r"got str"),
    ("model", {"plan_size": 8.5}, r"searcher 'model' option plan_size=8.5: expected int"),
    ("model", {"plan_size": True}, r"searcher 'model' option plan_size=True: expected int"),
])
def test_searcher_option_of_the_wrong_type_is_refused_naming_it(name, opts, msg, gemm8):
    from autotile.search import make_searcher, tune
    from autotile.search._factory import check_searcher_options
    from autotile.space import gemm_space

    with pytest.raises(TypeError, match=msg):
        check_searcher_options(name, opts)
    with pytest.raises(TypeError, match=msg):
        make_searcher(name, gemm_space(64), seed=0, **opts)
    space, _, measurer = gemm8
    with pytest.raises(TypeError, match=msg):  # refused before any trial runs
        tune(space, measurer, searcher=name, budget=2, seed=0, progress=False,
             searcher_kwargs=opts)


def test_seed_in_searcher_options_points_to_the_seed_argument():
    from autotile.search._factory import check_searcher_options

    with pytest.raises(TypeError, match=r"searcher 'tpe': 'seed' is not a searcher option; "
                                        r"pass seed= itself"):
        check_searcher_options("tpe", {"seed": 3})
    # an int fits a float option, numpy ints fit int options
    import numpy as np

    check_searcher_options("tpe", {"n_startup_trials": np.int64(4)})


@pytest.mark.parametrize("own", ["seed", "space"])
def test_seed_in_searcher_kwargs_of_tune_is_named_not_a_python_call_error(own, gemm8):
    # session 13: tune(..., seed=0, searcher_kwargs={"seed": 3}) raised Python's
    # "make_searcher() got multiple values for argument 'seed'" before the option check
    space, _, measurer = gemm8
    with pytest.raises(TypeError, match=rf"searcher 'tpe': '{own}' is not a searcher option; "
                                        rf"pass {own}= itself"):
        tune(space, measurer, searcher="tpe", budget=2, seed=0, progress=False,
             storage=":memory:", searcher_kwargs={own: 3})


@pytest.mark.parametrize("cls, example", [("RandomSearcher", "RandomSearcher(space, seed=0)"),
                                          ("TPESampler", "TPESampler(seed=0)")])
def test_a_searcher_class_instead_of_an_instance_is_named(cls, example, gemm8):
    # session 13: the class itself got "searcher must be one of (...), got <class ...>"
    import autotile.search

    klass = getattr(autotile.search, cls, None) or getattr(optuna.samplers, cls)
    space, _, measurer = gemm8
    with pytest.raises(ValueError) as exc:
        tune(space, measurer, searcher=klass, budget=2, seed=0, progress=False,
             storage=":memory:")
    assert str(exc.value) == (
        f"searcher must be a searcher's name or a sampler object, got the class {cls} "
        f"itself; pass an instance (e.g. {example}) or a name, one of ('grid', 'random', "
        f"'model', 'evolutionary', 'bandit', 'tpe', 'cmaes', 'gp', 'nsga2', 'qmc')")
