"""Interpreter speed: autotile.lang vs Triton's CPU interpreter (TRITON_INTERPRET=1).

Both interpreters run the *same kernel source*: the functions of
``autotile/kernels/_vector_add.py`` and ``_matmul.py`` are cut out of those
files with ``ast`` and written, unchanged, into a temporary module whose
header is ``import triton.language as tl; from triton import jit`` instead of
the autotile imports. Triton gets torch tensors made with ``torch.from_numpy``
on the same NumPy buffers that autotile gets.

Reports programs per second (best of ``--repeats`` timed launches, after one
warm-up launch for each) and the ratio autotile / Triton.

Usage::

    python benchmarks/interpreter/bench_interpreter.py [--repeats 5] [--quick]

Needs ``torch`` and ``triton`` (``pip install torch triton``; Linux wheel,
no GPU needed in interpreter mode). Without them it says so and exits 0.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

# Triton reads TRITON_INTERPRET when its runtime is imported.
os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import autotile.kernels as K  # noqa: E402

KERNEL_DIR = Path(K.__file__).parent
HEADER = "import triton\nimport triton.language as tl\nfrom triton import jit\n\n\n"


def triton_port(module_file: Path, names: list[str]) -> Any:
    """Import the named ``@jit`` functions of ``module_file`` under ``triton.jit``."""
    src = module_file.read_text()
    lines = src.splitlines()
    chunks = []
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            chunks.append("\n".join(lines[start : node.end_lineno]))
    missing = set(names) - {c.split("def ", 1)[1].split("(", 1)[0] for c in chunks}
    if missing:
        raise LookupError(f"functions not found in {module_file}: {sorted(missing)}")
    tmp = Path(tempfile.mkdtemp(prefix="autotile_triton_port_"))
    path = tmp / f"ported{module_file.stem}.py"
    path.write_text(HEADER + "\n\n\n".join(chunks) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def best_time_s(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: tracing / caching on both sides
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller problems")
    args = ap.parse_args()

    try:
        import torch
        import triton
    except ImportError as e:  # pragma: no cover - depends on the machine
        print(f"SKIPPED: Triton's interpreter is not available ({e}).")
        print("Install the benchmark extra: pip install torch triton")
        return 0

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, torch {torch.__version__}, "
          f"triton {triton.__version__}, TRITON_INTERPRET={os.environ['TRITON_INTERPRET']}")
    T = torch.from_numpy
    rng = np.random.default_rng(0)
    rows = []

    # ---------------------------------------------------------------- vector add
    tadd = triton_port(KERNEL_DIR / "_vector_add.py", ["add_kernel"])
    n, block = (98_432, 1024) if args.quick else (1 << 20, 1024)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out_a = np.empty_like(x)
    out_t = np.empty_like(x)
    grid = (-(-n // block),)
    t_auto = best_time_s(
        lambda: K.add_kernel[grid](x, y, out_a, n, BLOCK_SIZE=block), args.repeats)
    xt, yt, ot = T(x), T(y), T(out_t)
    t_tri = best_time_s(
        lambda: tadd.add_kernel[grid](xt, yt, ot, n, BLOCK_SIZE=block), args.repeats)
    assert np.array_equal(out_a, out_t), "vector add: autotile and Triton disagree"
    rows.append((f"vector add n={n:,} BLOCK={block}", grid[0], t_auto, t_tri))

    # ---------------------------------------------------------------- matmul
    tmm = triton_port(KERNEL_DIR / "_matmul.py", ["matmul_kernel"])
    size = 256 if args.quick else 512
    bm, bn, bk = 64, 64, 32
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    c_a = np.empty((size, size), np.float16)
    c_t = np.empty((size, size), np.float16)
    grid = ((-(-size // bm)) * (-(-size // bn)),)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, PID_ORDER="grouped")
    st = (size, 1, size, 1, size, 1)
    t_auto = best_time_s(
        lambda: K.matmul_kernel[grid](a, b, c_a, size, size, size, *st, **meta), args.repeats)
    at, bt, ct = T(a), T(b), T(c_t)
    t_tri = best_time_s(
        lambda: tmm.matmul_kernel[grid](at, bt, ct, size, size, size, *st, **meta),
        args.repeats)
    err = float(np.abs(c_a.astype(np.float32) - c_t.astype(np.float32)).max())
    rows.append((f"matmul {size}^3 fp16 {bm}x{bn}x{bk} (max abs diff {err:.1e})", grid[0],
                 t_auto, t_tri))

    # ---------------------------------------------------------------- fused softmax
    tsm = triton_port(KERNEL_DIR / "_softmax.py", ["softmax_kernel"])
    m, ncol = (256, 781) if args.quick else (1823, 781)
    xs = rng.standard_normal((m, ncol)).astype(np.float32)
    o_a = np.empty_like(xs)
    o_t = np.empty_like(xs)
    t_auto = best_time_s(
        lambda: K.softmax_kernel[(m,)](o_a, xs, ncol, ncol, ncol, BLOCK_SIZE=1024), args.repeats)
    xst, ost = T(xs), T(o_t)
    t_tri = best_time_s(
        lambda: tsm.softmax_kernel[(m,)](ost, xst, ncol, ncol, ncol, BLOCK_SIZE=1024),
        args.repeats)
    err = float(np.abs(o_a - o_t).max())
    rows.append((f"fused softmax {m}x{ncol} (max abs diff {err:.1e})", m, t_auto, t_tri))

    print()
    print("| workload | programs | autotile programs/s | Triton programs/s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n_prog, ta, tt in rows:
        print(f"| {name} | {n_prog} | {n_prog / ta:,.0f} | {n_prog / tt:,.0f} | "
              f"{tt / ta:.2f}x |")
    print("\nratio = autotile programs/s / Triton programs/s (> 1: autotile is faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
