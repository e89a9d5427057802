"""The ``autotile`` command line.

usage: autotile {compare,schedule,sweep} [options]   (``autotile <command> --help``)

``autotile compare``   compare searchers on a space (convergence report; the main job)
``autotile schedule``  the §7.2 schedule walk-through with exact miss counts
``autotile sweep``     measure every config of the GEMM schedule space into a table
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _schedule(argv: Sequence[str]) -> int:
    from autotile._walkthrough import run_walkthrough

    ap = argparse.ArgumentParser(prog="autotile schedule",
                                 description="The lecture notes' GEMM schedule walk-through.")
    ap.add_argument("--no-ir", action="store_true", help="don't print the lowered loop nests")
    args = ap.parse_args(argv)
    run_walkthrough(show_ir=not args.no_ir)
    return 0


def _sweep(argv: Sequence[str]) -> int:
    from autotile.measure import ScheduleMeasurer, sweep
    from autotile.space import gemm_canonical_key, gemm_space

    ap = argparse.ArgumentParser(prog="autotile sweep",
                                 description="Measure every schedule of the GEMM space.")
    ap.add_argument("--n", type=int, default=64, help="matrix size (default 64)")
    ap.add_argument("--out", default=None, help="output .npz (default gemm<n>_truth.npz)")
    ap.add_argument("--n-jobs", type=int, default=2,
                    help="parallel workers (joblib; -1 = all cores; default 2)")
    ap.add_argument("--limit", type=int, default=None, help="only the first LIMIT configs")
    args = ap.parse_args(argv)
    try:
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit must be >= 1, got {args.limit}")
        if args.n_jobs == 0:
            raise ValueError("--n-jobs must be a non-zero int (-1: all cores), got 0")
        space = gemm_space(args.n)
    except ValueError as exc:
        print(f"autotile sweep: error: {exc}", file=sys.stderr)
        return 2
    out = args.out or f"gemm{args.n}_truth.npz"
    if not out.endswith(".npz"):
        out += ".npz"  # as sweep() names the file
    truth = sweep(space, ScheduleMeasurer(space), out, n_jobs=args.n_jobs, limit=args.limit,
                  key=lambda c: gemm_canonical_key(c, args.n))
    print(f"wrote {out}: {truth.meta['n_configs']} configs "
          f"({truth.meta['n_unique']} distinct traces) in {truth.meta['wall_time_s']:.1f} s")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``autotile`` command line; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"schedule": _schedule, "sweep": _sweep}
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "compare":
        from autotile.search._cli import compare_main

        return int(compare_main(rest))
    if cmd not in commands:
        print(f"autotile: error: unknown command {cmd!r}; choose from "
              f"{['compare', *commands]}", file=sys.stderr)
        return 2
    return commands[cmd](rest)


if __name__ == "__main__":
    sys.exit(main())
