"""The periodic fast path with and without its stack-extension jumps, same run (issue 16).

Times ``walk_periodic`` (the walk of the fast path; footprint and lowering not
included) on random ``gemm_space(1024)`` schedules, once as shipped and once
from a copy of ``_periodic.py`` with ``INNER_MIN_EXT`` set to 10**9 (no loop
jumps before its stack is fresh), or, with ``--base REV``, from
``_periodic.py`` and ``_periodic_loops.py`` as of git revision ``REV`` (the code
before a change), one
schedule after the other, the smaller of two CPU times each
(``time.process_time``). Asserts equal hit counts and prints the median, 90th
percentile and mean of each, and the slowest schedules:

    python benchmarks/gemm/bench_inner_extend.py --seed 1 [--samples 200] [--base REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from autotile.measure import CacheConfig, ScheduleMeasurer
from autotile.measure.cpu import _periodic
from autotile.measure.cpu._nestsim import _affine_steps
from autotile.measure.cpu._periodic_loops import loop_periods
from autotile.space import gemm_space


def _without_extension(base: str | None = None):  # type: ignore[no-untyped-def]
    if base is None:
        src = Path(_periodic.__file__).read_text()
        src = re.sub(r"INNER_MIN_EXT = \d+", "INNER_MIN_EXT = 10**9", src)
    d = Path(tempfile.mkdtemp())
    if base is not None:
        # the base's loop_periods too (the walker imports it from _periodic_loops_off)
        srcs = []
        for f in ("_periodic", "_periodic_loops"):
            r = subprocess.run(["git", "show", f"{base}:autotile/measure/cpu/{f}.py"],
                               capture_output=True, text=True,
                               cwd=Path(_periodic.__file__).parent)
            if r.returncode:
                raise SystemExit(f"--base {base!r}: no autotile/measure/cpu/{f}.py there "
                                 f"({r.stderr.strip()})")
            srcs.append(r.stdout)
        src, lsrc = srcs
        imp = "from autotile.measure.cpu._periodic_loops import"
        if imp not in src:
            raise SystemExit(f"--base {base!r}: its _periodic.py does not import "
                             "loop_periods from _periodic_loops (too old for this script)")
        (d / "_periodic_loops_off.py").write_text(lsrc.replace("cache=True, ", ""))
        sys.path.insert(0, str(d))
        src = src.replace(imp, "from _periodic_loops_off import")
    src = src.replace("cache=True, ", "")
    path = d / "_periodic_off.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("_periodic_off", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_periodic_off"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _walk(mod, nest, cache):  # type: ignore[no-untyped-def]
    ext, step, addr0, base = _affine_steps(nest)
    lp = sys.modules["_periodic_loops_off"].loop_periods if mod.__name__ == "_periodic_off" \
        and "_periodic_loops_off" in sys.modules else loop_periods
    w = lp(ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
    n_ids = nest.total_bytes // cache.line_bytes + 1
    t0 = time.process_time()
    r = mod.walk_periodic(ext, step, addr0, cache.line_bytes, cache.n_sets, cache.ways,
                          cache.n_lines, n_ids, *w[:9], cache.ways >= len(nest.accesses),
                          mod.GIVE_UP, mod.FIRST_SPARSE, mod.GIVE_UP_IN_LINE, mod.MAX_BACKOFF,
                          w[10], w[11])
    return time.process_time() - t0, (int(r[0]), int(r[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--base", default=None,
                    help="git revision whose _periodic.py is the code without the change")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    off = _without_extension(args.base)
    space = gemm_space(1024)
    m = ScheduleMeasurer(space)
    cache = CacheConfig()
    cfgs = list(space.sample(np.random.default_rng(args.seed), args.samples))
    nests = [m.nest(c).simplified() for c in cfgs]
    _walk(_periodic, nests[0], cache)  # compile
    _walk(off, nests[0], cache)
    t_on, t_off = np.zeros(len(nests)), np.zeros(len(nests))
    for i, nest in enumerate(nests):
        a, ha = _walk(_periodic, nest, cache)
        b, hb = _walk(off, nest, cache)
        assert ha == hb, (dict(cfgs[i]), ha, hb)
        t_on[i] = min(a, _walk(_periodic, nest, cache)[0])
        t_off[i] = min(b, _walk(off, nest, cache)[0])
    for name, t in (("with extension", t_on), ("without" if args.base is None else args.base,
                                                   t_off)):
        print(f"{name}: median {np.median(t) * 1e3:.1f} ms, p90 {np.percentile(t, 90) * 1e3:.1f} ms"
              f" ({np.percentile(t, 90) / np.median(t):.2f}x), mean {t.mean() * 1e3:.1f} ms")
    print(f"identical hit counts: {len(nests)}/{len(nests)}; load average "
          f"{os.getloadavg()[0]:.2f}")
    for i in np.argsort(-t_off)[:args.top]:
        print(f"  {t_off[i] * 1e3:7.1f} -> {t_on[i] * 1e3:7.1f} ms  {dict(cfgs[i])}")


if __name__ == "__main__":
    main()
