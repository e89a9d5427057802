"""H200 energy probe: does the 700 W power cap order matmul configs by their DRAM traffic?

Runs on the lent H200 (Triton, PyTorch, ``nvidia-ml-py``, ``ncu``); reads the
card through NVML and changes none of its settings. For each item of
``--configs`` (matmul configs at 8192^3), for cuBLAS at three shapes, for a
device-to-device copy and for an idle period, it launches the item back to
back for ``--seconds`` and records:

* time per launch (CUDA events around the whole loop, divided by launches);
* energy per launch: NVML's total-energy counter
  (``nvmlDeviceGetTotalEnergyConsumption``, mJ) before and after the loop,
  divided by launches, and the mean of NVML power samples times the loop time
  as a cross-check;
* the SM clock, power, temperature and clock-event reasons (power cap,
  thermal, ...) sampled every 10 ms by a thread during the loop.

Items run in ``--rounds`` rounds, each in a fresh random order. Afterwards ncu
measures ``dram__bytes_read.sum`` / ``dram__bytes_write.sum`` of one launch of
every matmul config (``bench_h200.run_ncu``). Raw rows go to
``$OUT/h200_power.csv`` and ``$OUT/h200_power_ncu.csv``; the energy model is
fitted on the CPU by ``benchmarks/h200/h200_analyze.py --power-only``.

    python benchmarks/h200/h200_power.py --out $OUT

References: NVML API reference, "Device Queries" (energy counter, clock event
reasons); Choi, Bedard, Fowler, Vuduc, "A roofline model of energy", IPDPS
2013 (energy = static power x time + energy per flop x flops + energy per
byte x bytes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.bench_h200 import env_info, gpu_ready, log, run_ncu, write_csv  # noqa: E402

KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
#: Clock-event reason bits (NVML ``nvmlClocksEventReason*``).
REASONS = {"power_cap": 0x4, "hw_slowdown": 0x8, "sw_thermal": 0x20, "hw_thermal": 0x40,
           "power_brake": 0x80}


class Sampler:
    """Polls NVML every ``period_s`` in a thread: SM clock, power, temperature, reasons."""

    def __init__(self, nvml: Any, handle: Any, period_s: float = 0.01) -> None:
        self.nvml, self.h, self.period_s = nvml, handle, period_s
        self.samples: list[tuple[float, float, float, int]] = []
        self._stop = threading.Event()
        self._t: threading.Thread | None = None
        get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = get or nvml.nvmlDeviceGetCurrentClocksThrottleReasons

    def _run(self) -> None:
        n = self.nvml
        while not self._stop.is_set():
            try:
                self.samples.append((
                    float(n.nvmlDeviceGetClockInfo(self.h, n.NVML_CLOCK_SM)),
                    n.nvmlDeviceGetPowerUsage(self.h) / 1000.0,
                    float(n.nvmlDeviceGetTemperature(self.h, n.NVML_TEMPERATURE_GPU)),
                    int(self._reasons(self.h))))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(self.period_s)

    def __enter__(self) -> Sampler:
        self.samples = []
        self._stop.clear()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._t is not None:
            self._t.join()

    def summary(self) -> dict[str, Any]:
        s = self.samples
        if not s:
            return {"n_samples": 0}
        import numpy as np

        a = np.array([x[:3] for x in s])
        r = np.array([x[3] for x in s])
        out = {"n_samples": len(s), "sm_clock_mhz_mean": a[:, 0].mean(),
               "sm_clock_mhz_min": a[:, 0].min(), "sm_clock_mhz_max": a[:, 0].max(),
               "power_w_mean": a[:, 1].mean(), "power_w_max": a[:, 1].max(),
               "temp_c_mean": a[:, 2].mean()}
        for name, bit in REASONS.items():
            out[f"frac_{name}"] = float(((r & bit) != 0).mean())
        return out


def run_item(fn: Callable[[], None] | None, seconds: float, nvml: Any, handle: Any,
             chunk: int) -> dict[str, Any]:
    """Launch ``fn`` back to back for about ``seconds``; energy, time and samples."""
    import torch

    if fn is None:  # idle
        with Sampler(nvml, handle) as smp:
            e0, t0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
            time.sleep(seconds)
            e1, t1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
        return {"launches": 0, "loop_s": t1 - t0, "energy_j": (e1 - e0) / 1e3,
                "time_s": float("nan"), "energy_per_launch_j": float("nan"), **smp.summary()}
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t_w = time.perf_counter()
    while time.perf_counter() - t_w < 0.3:  # settle clocks and power
        for _ in range(chunk):
            fn()
        torch.cuda.synchronize()
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 0
    with Sampler(nvml, handle) as smp:
        e0, t0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
        ev0.record()
        while time.perf_counter() - t0 < seconds:
            for _ in range(chunk):
                fn()
            n += chunk
            torch.cuda.synchronize()
        ev1.record()
        torch.cuda.synchronize()
        e1, t1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
    gpu_s = ev0.elapsed_time(ev1) * 1e-3
    summ = smp.summary()
    return {"launches": n, "loop_s": t1 - t0, "gpu_s": gpu_s, "energy_j": (e1 - e0) / 1e3,
            "time_s": gpu_s / n, "energy_per_launch_j": (e1 - e0) / 1e3 / n,
            "energy_from_samples_per_launch_j": summ.get("power_w_mean", float("nan"))
            * gpu_s / n, **summ}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "h200_out"))
    ap.add_argument("--configs", default="benchmarks/h200/data/h200_power_configs.csv")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--deadline-s", type=float, default=330.0)
    ap.add_argument("--skip-ncu", action="store_true")
    args = ap.parse_args()
    if not gpu_ready("pynvml"):
        return 0
    import numpy as np
    import pynvml
    import torch

    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    info = env_info()
    info["nvml_enforced_power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3
    info["nvml_power_limit_default_w"] = pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1e3
    (out / "h200_power_env.json").write_text(json.dumps(info, indent=1, default=str))
    log(f"power limit {info['nvml_enforced_power_limit_w']} W")
    with Path(args.configs).open() as f:
        spec = [{"label": r["label"], "config": {k: int(r[k]) for k in KNOBS}}
                for r in csv.DictReader(f)]
    m = TritonMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192})
    t0 = time.perf_counter()
    errs = m.precompile([s["config"] for s in spec], n_jobs=args.jobs)
    log(f"precompiled {len(spec)} in {time.perf_counter() - t0:.1f} s "
        f"({sum(e is not None for e in errs)} errors: {[e for e in errs if e][:3]})")
    items: list[dict[str, Any]] = [{"label": "idle", "kind": "idle", "fn": None}]
    for s in spec:
        items.append({"label": s["label"], "kind": "triton", "config": s["config"],
                      "fn": m.launcher(s["config"]), "M": 8192, "N": 8192, "K": 8192})
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    for shp in ((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 2048)):
        a = torch.randn(shp[0], shp[2], device="cuda", generator=g).half()
        b = torch.randn(shp[2], shp[1], device="cuda", generator=g).half()
        c = torch.empty(shp[0], shp[1], device="cuda", dtype=torch.float16)
        items.append({"label": "cuBLAS", "kind": "cublas", "M": shp[0], "N": shp[1],
                      "K": shp[2], "fn": (lambda a=a, b=b, c=c: torch.matmul(a, b, out=c))})
    n_copy = 1 << 30  # fp16 elements: 2 GiB read + 2 GiB written per launch
    x = torch.empty(n_copy, device="cuda", dtype=torch.float16).fill_(1.0)
    y = torch.empty_like(x)
    items.append({"label": "copy 2 GiB", "kind": "copy", "copy_bytes": 2 * 2 * n_copy,
                  "fn": (lambda: y.copy_(x))})
    rows: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        if time.perf_counter() - t_start > args.deadline_s:
            log(f"deadline reached: stopping after {rnd} rounds")
            break
        for pos, i in enumerate(np.random.default_rng(100 + rnd).permutation(len(items))):
            it = items[i]
            base = {"round": rnd, "position": pos, "label": it["label"], "kind": it["kind"],
                    "M": it.get("M", ""), "N": it.get("N", ""), "K": it.get("K", ""),
                    **{k: it.get("config", {}).get(k, "") for k in KNOBS},
                    "copy_bytes": it.get("copy_bytes", "")}
            try:
                res = run_item(it["fn"], args.seconds, pynvml, h, chunk=20)
            except Exception as exc:  # noqa: BLE001
                res = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            rows.append({**base, **res})
            log(f"r{rnd} {it['label']} {it.get('config', '')} t={res.get('time_s', 0):.4g} "
                f"E={res.get('energy_per_launch_j', 0):.4g} J "
                f"P={res.get('power_w_mean', 0):.0f} W f={res.get('sm_clock_mhz_mean', 0):.0f}"
                f" cap={res.get('frac_power_cap', 0):.2f}")
            write_csv(out / "h200_power.csv", rows)
    if not args.skip_ncu:
        plan = [{"shape": [8192, 8192, 8192], "config": s["config"]} for s in spec]
        write_csv(out / "h200_power_ncu.csv", run_ncu(plan, out, "power"))
    log(f"done in {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
