"""Config sets of the H200 validation (benchmarks/h200/bench_h200.py): shapes, tutorial configs,
samples.

Pure Python (autotile + numpy): the same lists are rebuilt on the device
machine and here, from the same seeds.
"""

from __future__ import annotations

from typing import Any

from autotile.measure import flash_attention_space, matmul_space

#: Matmul problems (M, N, K), fp16 operands and output.
MATMUL_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 2048))
#: Configs sampled from ``matmul_space(8192, 8192, 8192)`` (seeded), reused at every shape
#: where they are valid.
N_SAMPLED = 130
SAMPLE_SEED = 2024

#: Triton tutorial 03 (``python/tutorials/03-matrix-multiplication.py``),
#: ``get_cuda_autotune_config()``: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps).
#: The first eight are its fp16 configs, the last eight its "good config for fp8 inputs";
#: the tutorial's autotuner tries all sixteen.
TUTORIAL_CONFIGS = (
    (128, 256, 64, 8, 3, 8),
    (64, 256, 32, 8, 4, 4),
    (128, 128, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4),
    (128, 32, 32, 8, 4, 4),
    (64, 32, 32, 8, 5, 2),
    (32, 64, 32, 8, 5, 2),
    (128, 256, 128, 8, 3, 8),
    (256, 128, 128, 8, 3, 8),
    (256, 64, 128, 8, 4, 4),
    (64, 256, 128, 8, 4, 4),
    (128, 128, 128, 8, 4, 4),
    (128, 64, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 32, 64, 8, 4, 4),
)

#: Fused softmax problems (rows, columns), float32 in and out.
SOFTMAX_SHAPES = ((32768, 1024), (8192, 4096), (4096, 16384))
SOFTMAX_WARPS = (1, 2, 4, 8, 16, 32)

#: Flash attention problems: sequence length N, head dim d, batch-heads.
FLASH_SHAPES = ((4096, 64, 32), (4096, 128, 16))
N_FLASH_SAMPLED = 22
#: Tutorial-06-like flash configs (BLOCK_M, BLOCK_N, num_warps, num_stages).
FLASH_FIXED = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 32, 4, 4), (64, 64, 4, 3),
               (64, 32, 4, 4), (128, 128, 8, 3))


def tutorial_configs() -> list[dict[str, int]]:
    """Tutorial 03's configs as matmul-space dicts."""
    return [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w, num_stages=s)
            for bm, bn, bk, g, s, w in TUTORIAL_CONFIGS]


def sampled_configs(n: int = N_SAMPLED, seed: int = SAMPLE_SEED) -> list[dict[str, Any]]:
    """``n`` distinct configs drawn uniformly from the 8192^3 matmul space."""
    return [dict(c) for c in matmul_space(8192, 8192, 8192).sample(seed, n)]


def matmul_plan() -> list[tuple[tuple[int, int, int], str, dict[str, Any]]]:
    """Every (shape, source, config) the matmul sweep measures.

    ``source`` is ``"tutorial"`` or ``"sampled"``. A config is kept at a
    shape only where it is valid in that shape's space (the tutorial's
    ``256x128x128`` with 3 stages needs 288 KiB of shared memory: it is in
    the list and reported as infeasible at every shape).
    """
    out = []
    tut, smp = tutorial_configs(), sampled_configs()
    for shp in MATMUL_SHAPES:
        space = matmul_space(*shp)
        for src, cfgs in (("tutorial", tut), ("sampled", smp)):
            for c in cfgs:
                if src == "tutorial" or space.is_valid(c):
                    out.append((shp, src, c))
    return out


def flash_plan() -> list[tuple[tuple[int, int, int], str, dict[str, Any]]]:
    """Every (shape, source, config) of the flash-attention sweep."""
    out = []
    for shp in FLASH_SHAPES:
        space = flash_attention_space(shp[0], shp[1])
        for bm, bn, w, s in FLASH_FIXED:
            out.append((shp, "fixed", dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s)))
        fixed = {tuple(c.values()) for _, _, c in out}
        for c in space.sample(SAMPLE_SEED + shp[1], N_FLASH_SAMPLED + len(FLASH_FIXED)):
            d = dict(c)
            if tuple(d.values()) not in fixed and sum(
                    1 for p in out if p[0] == shp and p[1] == "sampled") < N_FLASH_SAMPLED:
                out.append((shp, "sampled", d))
    return out


def softmax_plan() -> list[tuple[tuple[int, int], str, dict[str, Any]]]:
    """Every (shape, source, config) of the softmax sweep (one row per program)."""
    return [(shp, "grid", dict(num_warps=w, ROWS_PER_PROGRAM=1))
            for shp in SOFTMAX_SHAPES for w in SOFTMAX_WARPS]


def config_key(c: dict[str, Any]) -> str:
    """Stable text of a config (``k=v`` joined by ``;``, in the dict's order)."""
    return ";".join(f"{k}={v}" for k, v in c.items())
