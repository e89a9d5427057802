"""The GPU tuning protocol: model prior and pruning, early stop, compile ahead under a limit."""

from __future__ import annotations

import time

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.measure import MeasureResult
from autotile.space import Choice, Space
from autotile.tuner import CompilePool, LaunchConfig, autotune
from autotile.tuner._gpu_protocol import (
    Prediction,
    interleaved_retime,
    median,
    rank_by_model,
    worth_measuring,
)
from tests.tuner._fake_gpu import (
    FakeBackend,
    compile_job_worker,
    slow_exit_init,
    slow_start_init,
    start_in,
)
from tests.tuner.test_gpu_autotune import CONFIGS, _data, _time, double_kernel, grid

#: the model's predictions: BLOCK 16 cannot launch, 128 is 4x the best (64)
PREDS = {16: None, 32: 2e-3, 64: 1e-3, 128: 4e-3}


def scorer(config, args):
    b = config.kwargs["BLOCK"]
    if PREDS[b] is None:
        return MeasureResult(str(config), "infeasible", {}, 0.0, "shared memory 300000 B > "
                                                                 "232448 B")
    return PREDS[b]


def test_rank_by_model_orders_and_prunes():
    preds = {"a": Prediction(3.0), "b": Prediction(1.0), "c": Prediction(None, "smem"),
             "d": Prediction(None), "e": Prediction(3.5)}
    order, pruned = rank_by_model(list("abcde"), preds, prune_factor=3.0)
    assert order == ["b", "a", "d"]
    assert pruned["c"] == "the GPU model says it cannot launch: smem"
    assert pruned["e"] == ("the GPU model predicts 3.5 s, 3.50x its best candidate (1 s) > "
                           "prune_factor=3")
    order, pruned = rank_by_model(list("abcde"), preds, prune_factor=None)
    assert order == ["b", "a", "e", "d"] and list(pruned) == ["c"]
    # a model with no finite prediction says nothing: the user's order, nothing pruned
    order, pruned = rank_by_model(list("cd"), preds, prune_factor=3.0)
    assert order == ["c", "d"] and pruned == {}


def test_worth_measuring_rule():
    assert worth_measuring(5.0, [(1.0, 1.0)], 1.0, n_measured=1, min_measured=2)
    assert worth_measuring(None, [(1.0, 1.0), (2.0, 2.0)], 1.0, 2, 2)
    # a perfect model (constant ratio 1.5) stops at once
    assert not worth_measuring(1.3, [(1.0, 1.5), (1.2, 1.8)], 1.5, 2, 2)
    # ratios 1.5 and 1.0: r_mid 1.25, spread 1.5 -> optimistic 1.3 * 1.25 / 1.5 = 1.083
    assert worth_measuring(1.3, [(1.0, 1.5), (1.2, 1.2)], 1.2, 2, 2)
    assert not worth_measuring(1.5, [(1.0, 1.5), (1.2, 1.2)], 1.2, 2, 2)  # 1.25 >= 1.2


def test_median_and_interleaved_rounds():
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([1.0, 2.0, 3.0, 10.0]) == 2.5
    log = []
    calls = {c: (lambda c=c: log.append(c) or float(ord(c))) for c in "abc"}
    times, orders = interleaved_retime(calls, 4, np.random.default_rng(1))
    assert len(orders) == 4 and all(sorted(o) == ["a", "b", "c"] for o in orders)
    assert log == [c for o in orders for c in o]  # each round runs in its own order
    assert times == {c: [float(ord(c))] * 4 for c in "abc"}


def test_model_prunes_infeasible_and_far_off_configs_before_compiling():
    be = FakeBackend(_time)
    k = autotune(configs=CONFIGS, key=["n"], backend=be, scorer=scorer, disk_cache=False,
                 compile_ahead=False)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[16].status == "pruned" and "cannot launch: shared memory 300000 B" in rec[16].reason
    assert rec[128].status == "pruned" and "4.00x its best candidate" in rec[128].reason
    assert rec[128].metrics["model_time_s"] == 4e-3
    assert be.compiled == [64, 32]  # model order, pruned ones never compiled
    assert be.benched[:2] == [64, 32]
    assert k.best_config.kwargs["BLOCK"] == 64
    assert rec[64].metrics["model_time_s"] == 1e-3
    # the history keeps the user's order
    assert [r.config.kwargs["BLOCK"] for r in k.history] == [16, 32, 64, 128]


def test_prune_factor_is_an_option():
    be = FakeBackend(_time)
    k = autotune(configs=CONFIGS, key=["n"], backend=be, scorer=scorer, disk_cache=False,
                 compile_ahead=False, prune_factor=None, early_stop=False)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    assert be.compiled == [64, 32, 128]
    be = FakeBackend(_time)
    k = autotune(configs=CONFIGS, key=["n"], backend=be, scorer=scorer, disk_cache=False,
                 compile_ahead=False, model_prior=False)(double_kernel)
    k[grid](x, y, 200)
    assert be.compiled == [16, 32, 64, 128]


BIG = [LaunchConfig({"BLOCK": 2 ** i}) for i in range(3, 10)]  # 8 ... 512


def test_early_stop_after_the_models_top_when_the_model_ranks_well():
    pred = {c.kwargs["BLOCK"]: 1e-3 * (1 + 0.1 * i) for i, c in enumerate(BIG)}
    be = FakeBackend(lambda meta: 2 * pred[meta["BLOCK"]])  # off by 2x, same ranking
    k = autotune(configs=BIG, key=["n"], backend=be, scorer=lambda c, a: pred[c.kwargs["BLOCK"]],
                 disk_cache=False, compile_ahead=False, min_measured=3,
                 prune_factor=None)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    # the model's top 3, then one diversity probe (every candidate left differs in one
    # knob: the model's next, 64), whose error agrees: the stop ends the tuning
    assert be.benched[:4] == [8, 16, 32, 64] and k.n_timed == 4
    stopped = [r for r in k.history if r.status == "pruned"]
    assert len(stopped) == 3 and all(r.reason.startswith("early stop after 4 measured")
                                     for r in stopped)
    # only the measured candidates were compiled: the early stop came before the others
    assert be.compiled == [8, 16, 32, 64] and k.n_compiled == 4
    assert k.best_config.kwargs["BLOCK"] == 8


def test_the_diversity_probe_finds_a_family_the_model_is_biased_against():
    # flash attention at N = 2048, d = 128 on the H200: the model ranked every 128-row
    # tile first, each measured about 2x its prediction; 64-row tiles ran at 0.7x
    fam = [LaunchConfig({"BLOCK": b}, num_warps=w) for b in (128, 64) for w in (2, 4, 8)]
    pred = {(c.kwargs["BLOCK"], c.num_warps): (1.0e-4 if c.kwargs["BLOCK"] == 128 else 1.9e-4)
            + 1e-6 * c.num_warps for c in fam}
    real = {k: (2.0 if k[0] == 128 else 0.7) * v for k, v in pred.items()}
    be = FakeBackend(lambda meta: real[(meta["BLOCK"], meta["num_warps"])])
    k = autotune(configs=fam, key=["n"], backend=be, disk_cache=False, compile_ahead=False,
                 scorer=lambda c, a: pred[(c.kwargs["BLOCK"], c.num_warps)], min_measured=3,
                 prune_factor=None)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    assert be.benched[:4] == [128, 128, 128, 64]   # the probe is the model's best 64 block
    assert (k.best_config.kwargs["BLOCK"], k.best_config.num_warps) == (64, 2)
    np.testing.assert_array_equal(y, 2 * x)


def test_a_model_with_a_varying_error_measures_on():
    pred = {c.kwargs["BLOCK"]: 1e-3 * (1 + 0.1 * i) for i, c in enumerate(BIG)}
    real = {8: 1.5e-3, 16: 1.1e-3, 32: 1.4e-3, 64: 0.9e-3, 128: 3e-3, 256: 3e-3, 512: 3e-3}
    be = FakeBackend(lambda meta: real[meta["BLOCK"]])
    k = autotune(configs=BIG, key=["n"], backend=be, scorer=lambda c, a: pred[c.kwargs["BLOCK"]],
                 disk_cache=False, compile_ahead=False, min_measured=2,
                 prune_factor=None)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    # after 8, 16: ratios 1.5, 1.0 -> measure 32 (1.2e-3 * 1.25 / 1.5 = 1.0e-3 < 1.1e-3), ...
    assert be.benched[:4] == [8, 16, 32, 64]
    assert k.best_config.kwargs["BLOCK"] == 64
    # after 64 (ratio 0.69) the spread is 2.17: 128's optimistic time 1.4e-3 * 1.08 / 2.17
    # = 0.70e-3 < 0.9e-3, and 128's ratio 2.1 widens it further: all seven are measured
    assert sum(r.status == "ok" for r in k.history) == 7
    be2 = FakeBackend(lambda meta: real[meta["BLOCK"]])
    k2 = autotune(configs=BIG, key=["n"], backend=be2, disk_cache=False, compile_ahead=False,
                  scorer=lambda c, a: pred[c.kwargs["BLOCK"]], early_stop=False,
                  retime_top=1)(double_kernel)
    k2[grid](x, y, 200)
    assert be2.benched[:7] == [8, 16, 32, 64, 128, 256, 512]


# -- compile ahead ---------------------------------------------------------------------
def test_compile_pool_limits_each_job_and_keeps_going():
    jobs = [{"sleep_s": 0.05, "error": None}, {"sleep_s": 30.0, "error": None},
            {"sleep_s": 0.05, "error": "OutOfResources"}, {"sleep_s": 0.05, "error": "boom"},
            {"sleep_s": 0.05, "error": None}]
    t0 = time.perf_counter()
    with CompilePool(compile_job_worker, n_jobs=2, timeout_s=1.0, mp_context="fork") as pool:
        out = pool.run(jobs)
        again = pool.run(jobs[:1])
    assert time.perf_counter() - t0 < 15
    assert [o.status for o in out] == ["ok", "timeout", "error", "error", "ok"]
    assert out[1].error == "compile took longer than 1 s (compile_timeout_s); stopped"
    assert 1.0 <= out[1].compile_s < 3.0
    assert out[2].error_types[0] == "OutOfResources"
    assert out[3].error == "RuntimeError: boom"
    assert [o.status for o in again] == ["ok"]


def test_closing_the_pool_does_not_wait_for_slow_worker_exits():
    pool = CompilePool(compile_job_worker, n_jobs=3, timeout_s=30.0, init_fn=slow_exit_init,
                       mp_context="fork")
    out = pool.run([{"sleep_s": 0.0, "error": None}] * 3)
    assert [o.status for o in out] == ["ok"] * 3
    procs = [w.proc for w in pool._workers]
    t0 = time.perf_counter()
    pool.close()
    assert time.perf_counter() - t0 < 3.0  # each worker would take 10 s to exit by itself
    assert not any(p.is_alive() for p in procs)


def test_closing_the_pool_does_not_wait_for_workers_still_starting():
    # a fast first compile closes the pool while its workers still import PyTorch: they
    # cannot read a request to exit before their start-up ends, so none is waited for
    # (the H200 v4 run paid 0.21-0.24 s here in each of five tunings)
    pool = CompilePool(compile_job_worker, n_jobs=3, timeout_s=30.0, init_fn=slow_start_init,
                       mp_context="spawn")  # fresh interpreters: cheap to stop while starting
    pool.start(3)
    procs = [w.proc for w in pool._workers]
    assert len(procs) == 3 and all(p.is_alive() for p in procs)
    t0 = time.perf_counter()
    pool.close()
    assert time.perf_counter() - t0 < 0.15
    assert not any(p.is_alive() for p in procs)
    assert pool._workers == []


def test_a_forkserver_worker_runs_with_the_environment_of_its_start(monkeypatch):
    # a fork server keeps the environment of its own start; Triton reads its cache
    # directory (TRITON_CACHE_DIR, a fresh one per case in the benchmark) from the
    # environment, so a worker started later must see the parent's value at that moment
    import multiprocessing as mp

    from tests.tuner._fake_gpu import env_probe_worker

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    job = {"var": "AUTOTILE_TEST_POOL_ENV", "module": "json"}
    monkeypatch.setenv("AUTOTILE_TEST_POOL_ENV", "first")
    with CompilePool(env_probe_worker, n_jobs=1, timeout_s=30.0,
                     mp_context="forkserver") as pool:
        first = pool.run([job])
    monkeypatch.setenv("AUTOTILE_TEST_POOL_ENV", "second")
    with CompilePool(env_probe_worker, n_jobs=1, timeout_s=30.0,
                     mp_context="forkserver") as pool:
        second = pool.run([job])
    assert first[0].status == "error" and first[0].error.startswith("RuntimeError: first|")
    assert second[0].error.startswith("RuntimeError: second|")


def test_the_fork_server_imports_the_preloaded_modules_once():
    # in a fresh process (the fork server is one per process, started by its first
    # user): a module the workers never import themselves is there before their first job
    import multiprocessing as mp
    import subprocess
    import sys
    from pathlib import Path

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    code = (
        "import sys\n"
        "from autotile.tuner import CompilePool\n"
        "from tests.tuner._fake_gpu import env_probe_worker\n"
        "job = {'var': 'HOME', 'module': 'xml.dom.minidom'}\n"
        "with CompilePool(env_probe_worker, n_jobs=1, mp_context='forkserver',\n"
        "                 preload=sys.argv[1:]) as pool:\n"
        "    print(pool.run([job])[0].error.rsplit('|', 1)[1])\n")
    root = Path(__file__).resolve().parents[2]
    seen = []
    for preload in ([], ["xml.dom.minidom"]):
        out = subprocess.run([sys.executable, "-c", code, *preload], cwd=root,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.strip())
    assert seen == ["False", "True"]


def test_a_fork_server_start_does_not_block_and_a_close_meanwhile_stops_its_workers(
        tmp_path):
    # the first start of a process waits for the server's preload (PyTorch and Triton on
    # the H200: seconds); a probe compile done meanwhile closes the pool at once
    import multiprocessing as mp
    import os
    import subprocess
    import sys
    from pathlib import Path

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    (tmp_path / "autotile_slow_preload.py").write_text("import time\ntime.sleep(1.5)\n")
    code = (
        "import multiprocessing as mp, threading, time\n"
        "from autotile.tuner import CompilePool\n"
        "from tests.tuner._fake_gpu import compile_job_worker\n"
        "pre = ['autotile_slow_preload']\n"
        "pool = CompilePool(compile_job_worker, n_jobs=2, mp_context='forkserver',\n"
        "                   preload=pre)\n"
        "t0 = time.perf_counter(); pool.start(2); start_s = time.perf_counter() - t0\n"
        "t0 = time.perf_counter(); pool.close(); close_s = time.perf_counter() - t0\n"
        "for th in threading.enumerate():\n"
        "    if th.name == 'autotile-pool-start':\n"
        "        th.join(60.0)\n"
        "print(start_s < 0.5, close_s < 0.5, len(mp.active_children()), pool._workers)\n"
        "with CompilePool(compile_job_worker, n_jobs=2, mp_context='forkserver',\n"
        "                 preload=pre) as pool:\n"
        "    print([o.status for o in pool.run([{'sleep_s': 0.0, 'error': None}] * 3)])\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # start and close take well under the server's 1.5 s preload (a blocking start: >= 1.5 s;
    # measured 0.0 s each), and once the start thread is done no worker is left
    assert out.stdout.splitlines() == ["True True 0 []", "['ok', 'ok', 'ok']"]


def test_a_close_before_the_start_thread_runs_leaves_no_worker():
    # the start thread used to read the pool's generation only once it held the start
    # lock: a close() made before that (here: while the lock is held) was missed, and the
    # thread started workers for the closed pool that nobody stopped
    import multiprocessing as mp
    import threading

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    pool = CompilePool(compile_job_worker, n_jobs=2, timeout_s=30.0, mp_context="forkserver")
    before, children = set(threading.enumerate()), set(mp.active_children())
    with pool._start_lock:
        pool.start(2)
        pool.close()
    for th in set(threading.enumerate()) - before:
        if th.name == "autotile-pool-start":
            th.join(60.0)
            assert not th.is_alive()
    assert pool._workers == [] and set(mp.active_children()) == children
    # the pool is not spent: a later run starts its own workers
    assert [o.status for o in pool.run([{"sleep_s": 0.0, "error": None}] * 2)] == ["ok", "ok"]
    assert len(pool._workers) == 2
    pool.close()
    assert pool._workers == [] and set(mp.active_children()) == children


def test_run_waits_for_a_start_thread_that_has_not_yet_taken_the_start_lock(monkeypatch):
    # run() only took the start lock: a start() thread that had not yet taken it started
    # its workers later, alongside or after the run
    import multiprocessing as mp
    import threading

    import autotile.tuner._compile_ahead as CA

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no fork server on this platform")

    class LateThread(threading.Thread):
        def run(self):
            time.sleep(1.0)  # the start thread is scheduled late
            super().run()

    monkeypatch.setattr(CA.threading, "Thread", LateThread)
    with CompilePool(compile_job_worker, n_jobs=2, timeout_s=30.0,
                     mp_context="forkserver") as pool:
        pool.start(2)
        out = pool.run([{"sleep_s": 0.0, "error": None}])
        assert [o.status for o in out] == ["ok"] and len(pool._workers) == 2
        assert pool._starters == []


def test_a_worker_that_cannot_start_is_warned_about():
    # the tuning goes on without it (the caller compiles), but the user is told why it is
    # slower: e.g. a fork server whose workers cannot initialise CUDA
    from tests.tuner._fake_gpu import failing_init

    with pytest.warns(RuntimeWarning, match=r"autotile: the compile worker failed to start: "
                                            r"RuntimeError: CUDA driver initialization failed"):
        with CompilePool(compile_job_worker, n_jobs=1, timeout_s=30.0, init_fn=failing_init,
                         mp_context="fork") as pool:
            out = pool.run([{"sleep_s": 0.0, "error": None}] * 2)
    assert [o.status for o in out] == ["crashed", "crashed"]
    assert out[0].error == ("the compile worker failed to start: RuntimeError: CUDA driver "
                            "initialization failed")


def test_serve_warns_about_a_worker_that_cannot_start_and_the_caller_takes_every_job():
    import warnings

    from autotile.tuner._compile_ahead import SharedJobs
    from tests.tuner._fake_gpu import failing_init

    jobs = [{"sleep_s": 0.0, "error": None}] * 3
    shared = SharedJobs(len(jobs))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with CompilePool(compile_job_worker, n_jobs=1, timeout_s=30.0, init_fn=failing_init,
                         mp_context="fork") as pool:
            th = _serving(pool, jobs, shared, 1)
            deadline = time.monotonic() + 10.0
            while not seen and time.monotonic() < deadline:  # the serve thread warns
                time.sleep(0.01)
            taken = [shared.take_front() for _ in range(3)]
            shared.stop.set()
            th.join(10.0)
    assert [(w.category, str(w.message)) for w in seen] == [(RuntimeWarning, (
        "autotile: the compile worker failed to start: RuntimeError: CUDA driver "
        "initialization failed; the configs it would have compiled compile in this process"))]
    assert taken == [0, 1, 2] and shared.by_pool == [] and shared.outcomes == {}
    assert pool._workers == []


def test_compile_pool_names_a_bad_preload():
    with pytest.raises(InvalidConfigError, match=r"preload must be a sequence of module "
                                                 r"names, got preload='torch'"):
        CompilePool(compile_job_worker, preload="torch")


def _serving(pool, jobs, shared, n_workers):
    import threading

    th = threading.Thread(target=pool.serve, args=(jobs, shared, n_workers), daemon=True)
    th.start()
    return th


def test_serve_gives_ready_workers_the_last_jobs_nobody_took():
    from autotile.tuner._compile_ahead import SharedJobs

    jobs = [{"sleep_s": 0.1, "error": None}] * 3 + [{"sleep_s": 0.1, "error": "boom"}]
    shared = SharedJobs(len(jobs))
    with CompilePool(compile_job_worker, n_jobs=2, timeout_s=30.0, init_fn=start_in(0.3),
                     mp_context="fork") as pool:
        th = _serving(pool, jobs, shared, 2)
        # the caller takes from the front; the workers start in 0.3 s and take nothing before
        assert shared.take_front() == 0 and shared.take_front() == 1
        time.sleep(0.1)
        assert shared.by_pool == []
        shared.drain.set()
        th.join(10.0)
        assert not th.is_alive()
    assert sorted(shared.by_pool) == [2, 3] and shared.by_pool[0] == 3
    assert shared.outcomes[2].status == "ok" and shared.outcomes[2].compile_s == \
        pytest.approx(0.1, abs=0.08)
    assert shared.outcomes[3].error == "RuntimeError: boom"
    assert shared.take_front() is None and shared.n_left() == 0


def test_stopping_serve_stops_the_workers_running_a_job():
    from autotile.tuner._compile_ahead import SharedJobs

    jobs = [{"sleep_s": 0.0, "error": None}, {"sleep_s": 30.0, "error": None}]
    shared = SharedJobs(len(jobs))
    pool = CompilePool(compile_job_worker, n_jobs=1, timeout_s=60.0, mp_context="fork")
    th = _serving(pool, jobs, shared, 1)
    deadline = time.monotonic() + 5.0
    while shared.by_pool != [1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert shared.by_pool == [1]
    procs = [w.proc for w in pool._workers]
    # the caller took job 0, then takes over the one the worker runs (30 s) and stops serving
    assert shared.take_front() == 0 and shared.take_over() == 1 and shared.take_over() is None
    shared.stop.set()
    t0 = time.perf_counter()
    th.join(10.0)
    assert not th.is_alive() and time.perf_counter() - t0 < 3.0
    assert shared.outcomes == {} and pool._workers == []
    assert not any(p.is_alive() for p in procs)
    pool.close()


def test_compile_pool_spawn_start_method():
    with CompilePool(compile_job_worker, n_jobs=1, timeout_s=30.0) as pool:
        out = pool.run([{"sleep_s": 0.0, "error": "x"}])
    assert out[0].status == "error" and out[0].error == "RuntimeError: x"


def test_ahead_compile_timeouts_and_resource_errors_become_records():
    be = FakeBackend(_time, ahead=True, compile_sleep_s={32: 30.0},
                     compile_errors={16: "OutOfResources", 128: "LLVM ERROR: bad"})
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, disk_cache=False,
                 n_compile_jobs=2, compile_timeout_s=1.0)(double_kernel)
    x, y = _data()
    t0 = time.perf_counter()
    k[grid](x, y, 200)
    assert time.perf_counter() - t0 < 20
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[32].status == "failed" and rec[32].reason.startswith("compile timeout: compile "
                                                                    "took longer than 1 s")
    assert rec[16].status == "infeasible" and "OutOfResources" in rec[16].reason
    assert rec[128].status == "failed" and rec[128].reason == ("compile: RuntimeError: LLVM "
                                                               "ERROR: bad")
    # 16 compiled fast here (the probe), so 32 compiled here too; past the limit it is
    # left to its thread and the rest go to the pool's workers
    assert be.compiled == [16, 32] and be.jobs == [64, 128] and k.n_compiled == 4
    assert be.launched.count(32) == 0 and be.launched.count(16) == 0
    assert k.best_config.kwargs["BLOCK"] == 64 and rec[64].metrics["compile_s"] < 1.0


def test_fast_compiles_stay_in_process_and_stop_the_pool():
    be = FakeBackend(_time, ahead=True)
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, disk_cache=False,
                 n_compile_jobs=2)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    assert be.jobs == [] and sorted(be.compiled) == [16, 32, 64, 128] and k.n_compiled == 4
    assert k.compile_mode == "here"
    assert k.best_config.kwargs["BLOCK"] == 64
    np.testing.assert_array_equal(y, 2 * x)


def test_a_slow_first_compile_sends_the_rest_to_the_pool(monkeypatch):
    import autotile.tuner._gpu_session as S

    monkeypatch.setattr(S, "IN_PROCESS_PROBE_S", 0.2)
    be = FakeBackend(_time, ahead=True, compile_sleep_s={16: 0.5})
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, disk_cache=False,
                 n_compile_jobs=2, compile_timeout_s=10.0)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    assert be.compiled == [16] and be.jobs == [32, 64, 128] and k.n_compiled == 4
    # the (forked, at once ready) workers took the three others while 16 compiled here
    assert k.compile_mode == "shared"
    assert {c.kwargs["BLOCK"]: w for c, w in k.compiled_by.items()} == {
        16: "here", 32: "pool", 64: "pool", 128: "pool"}
    assert {r.config.kwargs["BLOCK"]: r.status for r in k.history} == {
        16: "ok", 32: "ok", 64: "ok", 128: "ok"}


def test_a_config_known_to_compile_slowly_is_not_compiled_again(tmp_path):
    be = FakeBackend(_time, ahead=True, compile_sleep_s={32: 30.0})
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, cache_dir=tmp_path,
                 n_compile_jobs=2, compile_timeout_s=1.0)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    be2 = FakeBackend(_time, ahead=True)
    k2 = autotune(configs=CONFIGS, key=["n"], backend=be2, model_prior=False,
                  cache_dir=tmp_path)(double_kernel)
    k2[grid](x, y, 200)
    assert be2.jobs == [] and k2.cache_source == "disk"
    assert {r.config.kwargs["BLOCK"]: r.status for r in k2.history}[32] == "failed"


# -- the space form --------------------------------------------------------------------
def test_space_form_on_the_gpu():
    pytest.importorskip("optuna")
    space = Space([Choice("BLOCK", (16, 32, 64, 128)), Choice("num_warps", (4,))])
    be = FakeBackend(_time)
    k = autotune(space=space, key=["n"], backend=be, searcher="grid", budget=4, seed=0,
                 disk_cache=False, scorer=scorer)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert k.best_config.kwargs["BLOCK"] == 64
    assert rec[16].status == "pruned" and 16 not in be.compiled
    assert rec[64].status == "ok" and rec[64].time_s == pytest.approx(1e-3)
    assert k.study is not None
    np.testing.assert_array_equal(y, 2 * x)


def test_space_form_on_the_gpu_passes_searcher_kwargs():
    pytest.importorskip("optuna")
    space = Space([Choice("BLOCK", (16, 32, 64, 128)), Choice("num_warps", (4,))])
    k = autotune(space=space, key=["n"], backend=FakeBackend(_time), searcher="tpe",
                 searcher_kwargs={"n_startup_trials": 3}, budget=4, seed=0,
                 disk_cache=False, scorer=scorer)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    ost = k.study.optuna_study
    assert ost.user_attrs["autotile:searcher_kwargs"] == {"n_startup_trials": 3}
    assert ost.sampler._n_startup_trials == 3
    with pytest.raises(InvalidConfigError, match=r"searcher 'grid' has no option\(s\) "
                                                 r"\['plan_size'\]; its options are \[\]"):
        autotune(space=space, key=["n"], backend=FakeBackend(_time), searcher="grid",
                 searcher_kwargs={"plan_size": 8}, scorer=scorer)(double_kernel)


# -- the default model prior on a library kernel ----------------------------------------
def test_default_prior_is_the_gpu_model_of_the_library_matmul():
    import autotile.lang as tl
    from autotile.kernels import matmul_kernel

    configs = [LaunchConfig({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "GROUP_M": 8},
                            num_warps=w, num_stages=3)
               for bm, bn, w in ((16, 16, 2), (64, 64, 4), (32, 32, 2), (128, 128, 8))]
    be = FakeBackend(lambda meta: 1e-3, knob="BLOCK_M", device="NVIDIA H200")
    k = autotune(configs=configs, key=["M", "N", "K"], backend=be, disk_cache=False,
                 compile_ahead=False, prune_factor=None, early_stop=False)(matmul_kernel)
    M, N, K = 96, 80, 64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)

    def mm_grid(meta):
        return (tl.cdiv(meta["M"], meta["BLOCK_M"]) * tl.cdiv(meta["N"], meta["BLOCK_N"]),)

    k[mm_grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, PID_ORDER="grouped")
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    preds = {cf.kwargs["BLOCK_M"]: p.time_s for cf, p in k.predictions.items()}
    assert all(t is not None and 0 < t < 1e-3 for t in preds.values())
    # compiled (and timed) in the model's order
    assert be.compiled == sorted(preds, key=preds.get)
    assert all(r.metrics["model_time_s"] == preds[r.config.kwargs["BLOCK_M"]]
               for r in k.history)


def test_no_timing_starts_while_a_compile_left_past_its_limit_still_runs_here():
    # 32 compiles here (the probe of 16 was fast) past its 1 s limit: its thread is left
    # to finish (1.6 s) while the rest compile in the pool (about 0.1 s); the first timing
    # waits for it (a compile thread competes with the timed launches for the GIL)
    events = []

    class Logging(FakeBackend):
        def compile(self, kernel, args, kwargs, grid, config):
            super().compile(kernel, args, kwargs, grid, config)
            events.append(("compiled", config.kwargs["BLOCK"], time.perf_counter()))

        def bench(self, call, warmup_ms, rep_ms):
            events.append(("bench", None, time.perf_counter()))
            return super().bench(call, warmup_ms, rep_ms)

    be = Logging(_time, ahead=True, compile_sleep_s={32: 1.6})
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, disk_cache=False,
                 n_compile_jobs=2, compile_timeout_s=1.0)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[32].status == "failed" and rec[32].reason.startswith("compile timeout")
    done_32 = [t for what, b, t in events if what == "compiled" and b == 32]
    first_bench = min(t for what, _, t in events if what == "bench")
    assert len(done_32) == 1 and first_bench >= done_32[0]
    assert not any("compile_running" in r.metrics for r in k.history)
    assert k.best_config.kwargs["BLOCK"] == 64


def test_a_timing_made_while_a_compile_still_runs_is_marked():
    # the wait is bounded by one more compile_timeout_s: 32's compile (3 s) outlives it
    be = FakeBackend(_time, ahead=True, compile_sleep_s={32: 3.0})
    k = autotune(configs=CONFIGS, key=["n"], backend=be, model_prior=False, disk_cache=False,
                 n_compile_jobs=2, compile_timeout_s=0.3)(double_kernel)
    x, y = _data()
    k[grid](x, y, 200)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[16].metrics["compile_running"] == 1.0
    assert k.best_config.kwargs["BLOCK"] == 64
