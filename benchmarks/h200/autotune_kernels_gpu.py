"""``autotile.autotune`` against ``triton.autotune`` on fused softmax, layer norm and attention.

Issue #13's "other kernels" check, on the library kernels written in
``autotile.lang`` and run under ``triton.jit``: ``softmax_kernel`` (tutorial 02),
``layer_norm_fwd_kernel`` (tutorial 05's forward) and ``attn_fwd_kernel``
(tutorial 06's forward; causal where a case's shape has ``causal: 1``). Each
case's config list is the reference of the issue: for softmax and layer norm
every ``num_warps`` in {1, 2, 4, 8, 16, 32} with the tutorial's block size
(``next_power_of_2(N)``, capped at 64 KB of elements for layer norm); for
attention tutorial 06's autotune configs after its ``keep`` filter (``BLOCK_M``
in {64, 128}, ``BLOCK_N`` in {32, 64, 128}, 2-4 stages, 4 or 8 warps; 8 warps
only for 128 x 128 tiles).

Two parts:

``--part predict`` (CPU, committed before the device run): the GPU model's
predicted time of every config (``autotile.perf_model``'s estimate, the prior
that ``@autotune`` uses), hence its zero-shot pick.
Writes ``benchmarks/h200/data/autotune_kernels_predictions.csv``.

``--part time --out $OUT`` (the H200): first a warm-up compile of an unrelated
kernel pays the process's one-time compile costs (since v5; ``--no-process-warmup``
skips it, as v1-v4 did); then for each case, from a cold Triton cache each time,
``autotile.autotune(configs=...)`` with default settings and
``triton.autotune(configs=...)`` tune once (wall time of the first call, the
pick); then every config, both picks and the torch reference
(``torch.softmax``, ``F.layer_norm``, ``F.scaled_dot_product_attention``) are
timed in ``--rounds`` interleaved rounds (``do_bench`` median, L2 flushed).
Writes ``autotune_kernels_{tuning,rounds,summary}.csv`` to ``--out``.

``--part report`` prints, per case: the picks' % of the best config, the
model's zero-shot pick % (from the committed predictions), both tuning walls.

    python benchmarks/h200/autotune_kernels_gpu.py --part predict
    python benchmarks/h200/autotune_kernels_gpu.py --part time --out $OUT   # H200
    python benchmarks/h200/autotune_kernels_gpu.py --part report --measured DIR

``--cases v2`` (v3 ... v9) selects the second (third ... ninth) list of new shapes
(predictions ``data/autotune_kernels_v2_predictions.csv``); ``--kernels`` restricts any part
to some kernels (the device part can then run in two calls, one folder each,
all of them given to ``--part report --measured``).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.h200.autotune_gpu import CsvOut, fresh_triton_cache, log  # noqa: E402

DATA = ROOT / "benchmarks" / "h200" / "data"

#: (kernel, shape, dtype) cases, fixed before the predictions: 3 shapes per kernel,
#: none of them a shape any GPU-model constant was fitted on or an earlier run of this
#: benchmark timed (the first run's shapes are in git history, commit f146456).
CASES_V1: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 12288, "N": 3000}, "float32"),
    ("softmax", {"M": 6144, "N": 9000}, "float32"),
    ("softmax", {"M": 65536, "N": 768}, "float32"),
    ("layer_norm", {"M": 6144, "N": 6144}, "float16"),
    ("layer_norm", {"M": 12288, "N": 3000}, "float16"),
    ("layer_norm", {"M": 3072, "N": 12288}, "float16"),
    ("attention", {"heads": 24, "N": 2048, "d": 128}, "float16"),
    ("attention", {"heads": 48, "N": 3072, "d": 64}, "float16"),
    ("attention", {"heads": 8, "N": 16384, "d": 64}, "float16"),
]
#: The second check (session 8), fixed before its predictions: shapes in no data file
#: of the repository (autotune_kernels*, h200_softmax.csv, h200_flash.csv,
#: records_model_v*), in neither earlier case list, and not those the models were
#: changed on. 2500 is not a multiple of 16 (Triton loads such rows element-wise);
#: one bf16 case.
CASES_V2: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 20480, "N": 2048}, "float32"),
    ("softmax", {"M": 16384, "N": 2500}, "float32"),
    ("softmax", {"M": 3072, "N": 20000}, "float32"),
    ("layer_norm", {"M": 10240, "N": 4096}, "bfloat16"),
    ("layer_norm", {"M": 24576, "N": 1536}, "float16"),
    ("layer_norm", {"M": 2560, "N": 14336}, "float16"),
    ("attention", {"heads": 16, "N": 6144, "d": 64}, "float16"),
    ("attention", {"heads": 12, "N": 4096, "d": 128}, "float16"),
    ("attention", {"heads": 96, "N": 512, "d": 64}, "float16"),
]
#: The third check (session 9), fixed before its predictions and before the changes
#: made on the v2 run's data: shapes in no data file of the repository (as for v2, plus
#: autotune_kernels_v2/) and in neither earlier case list. 1536 x 32768 fp32 has the
#: longest rows yet (the in-sample 3072 x 20000 wanted 32 warps); 5000 is not a multiple
#: of 16; 2048 x 28672 and 32 x 1024 x 64 are short launches (20-70 us).
CASES_V3: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 1536, "N": 32768}, "float32"),
    ("softmax", {"M": 24576, "N": 1280}, "float32"),
    ("softmax", {"M": 10240, "N": 5000}, "float32"),
    ("layer_norm", {"M": 3584, "N": 10240}, "bfloat16"),
    ("layer_norm", {"M": 16384, "N": 2560}, "float16"),
    ("layer_norm", {"M": 2048, "N": 28672}, "float16"),
    ("attention", {"heads": 32, "N": 1024, "d": 64}, "float16"),
    ("attention", {"heads": 4, "N": 8192, "d": 128}, "float16"),
    ("attention", {"heads": 40, "N": 2560, "d": 128}, "float16"),
]
#: The fourth check (session 10), fixed before its predictions, after the tuner's
#: protocol changes for short lists (timings share triton.autotune's budget, only close
#: leaders re-timed, the model prior's cost capped): fused softmax and layer norm only,
#: the two kernels whose tuning was slower than triton.autotune in v3. Shapes in no data
#: file of the repository and in no earlier case list; blocks of at most 8192 elements
#: (Triton compiles larger ones slowly); 1000 and 1800 are not multiples of 16.
CASES_V4: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 18432, "N": 1792}, "float32"),
    ("softmax", {"M": 8192, "N": 6000}, "float32"),
    ("softmax", {"M": 30720, "N": 1000}, "float32"),
    ("layer_norm", {"M": 22528, "N": 3072}, "float16"),
    ("layer_norm", {"M": 8192, "N": 5120}, "bfloat16"),
    ("layer_norm", {"M": 12288, "N": 1800}, "float16"),
]
#: The fifth check (session 11), fixed before its predictions, with the tuner of branch
#: hkt2 (a prior that cannot pay skipped before its first prediction: not yet measured
#: on a GPU): all three kernels. Shapes in no data file of the repository and in no
#: earlier case list. Softmax stays fp32 (the library kernel, like tutorial 02, calls
#: ``tl.exp`` on the loaded row, which Triton takes in fp32 or fp64 only); layer norm
#: and attention mix fp16 and bf16. Rows of 13000 (a 16384-element block, the long
#: row), 3300, 700, 1100, 3700 and 7600 elements, none a power of two and all but 7600
#: not multiples of 16; small batches (1152 softmax rows, 1408 layer-norm rows: about 9
#: and 11 rows per SM) and large ones (57344 and 40960 rows). Attention: a causal case
#: (``causal: 1``, the kernel's ``CAUSAL``, torch's reference with ``is_causal``), bf16
#: at head dimension 128, and head dimension 32 at N = 10240 (tutorial 06 takes head
#: dimensions 16-256). Layer-norm blocks stay at most 8192 elements (a 16384 block cost
#: each tuner 42-60 s in v1-v3), so that the whole device part fits one call: about
#: 170-200 s expected from v4's six cases (62 s, blocks up to 8192), v1's softmax with
#: a 16384 block (13.5 s for both tunings) and v3's attention (96 s for three cases).
CASES_V5: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 1152, "N": 13000}, "float32"),
    ("softmax", {"M": 57344, "N": 700}, "float32"),
    ("softmax", {"M": 12800, "N": 3300}, "float32"),
    ("layer_norm", {"M": 40960, "N": 1100}, "float16"),
    ("layer_norm", {"M": 6656, "N": 3700}, "bfloat16"),
    ("layer_norm", {"M": 1408, "N": 7600}, "float16"),
    ("attention", {"heads": 20, "N": 4608, "d": 64, "causal": 1}, "float16"),
    ("attention", {"heads": 56, "N": 1536, "d": 128}, "bfloat16"),
    ("attention", {"heads": 6, "N": 10240, "d": 32}, "float16"),
]
#: The sixth check (session 12), fixed before its predictions, with the tuner of branch
#: hkt4 (a slow first compile shares its batch: the process compiles on, a worker takes
#: configs only once ready; measured on no GPU yet) and the records model v11: all three
#: kernels, shapes in no data file of the repository and in no earlier case list. Layer
#: norm 7168 x 3900 in bf16 is v5's slow-tuning class (6656 x 3700: 10.03 s against
#: triton.autotune's 6.38 s); 1792 x 6800 in fp16 is v5's zero-shot miss class (1408 x
#: 7600, about 14 rows per SM). Softmax in fp32 (tutorial 02); rows of 9500, 900 and
#: 2900 elements, none a multiple of 16. Attention: causal bf16 at head dimension 64,
#: fp16 at 128 and a long sequence at 64.
CASES_V6: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 2816, "N": 9500}, "float32"),
    ("softmax", {"M": 49152, "N": 900}, "float32"),
    ("softmax", {"M": 14336, "N": 2900}, "float32"),
    ("layer_norm", {"M": 7168, "N": 3900}, "bfloat16"),
    ("layer_norm", {"M": 1792, "N": 6800}, "float16"),
    ("layer_norm", {"M": 34816, "N": 1300}, "float16"),
    ("attention", {"heads": 12, "N": 7168, "d": 64, "causal": 1}, "bfloat16"),
    ("attention", {"heads": 48, "N": 2048, "d": 128}, "float16"),
    ("attention", {"heads": 10, "N": 8192, "d": 64}, "float16"),
]
#: The seventh check (session 12), fixed before its predictions and before the compile
#: protocol change of branch hkt5 was written (its diagnosis used the v5 and v6 runs,
#: now in-sample): all three kernels, shapes in no data file of the repository and in
#: no earlier case list. Softmax in fp32 with a 16384-element block (3200 rows, about
#: 24 per SM), a 2048 block at a large batch and an 8192 block; rows of 10500, 1400 and
#: 6500 elements, none a multiple of 16. Layer norm: v6's slower class again (a small
#: batch with an 8192-element block, 1664 x 7800 fp16, about 13 rows per SM), a 4096
#: block in bf16 and a 1024 block at a large batch in fp16 (950 and 3500 are not
#: multiples of 16). Attention: causal fp16 at head dimension 64, bf16 at 128 and a long
#: sequence (13824) at 64; every N a multiple of 128. Expected device time about 180 s
#: (v6's composition: one 16384 softmax block, one 8192 layer-norm block, three
#: attention cases).
CASES_V7: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 3200, "N": 10500}, "float32"),
    ("softmax", {"M": 38912, "N": 1400}, "float32"),
    ("softmax", {"M": 7296, "N": 6500}, "float32"),
    ("layer_norm", {"M": 1664, "N": 7800}, "float16"),
    ("layer_norm", {"M": 8448, "N": 3500}, "bfloat16"),
    ("layer_norm", {"M": 46080, "N": 950}, "float16"),
    ("attention", {"heads": 14, "N": 5760, "d": 64, "causal": 1}, "float16"),
    ("attention", {"heads": 26, "N": 3456, "d": 128}, "bfloat16"),
    ("attention", {"heads": 7, "N": 13824, "d": 64}, "float16"),
]
#: The eighth check (session 13), fixed before its predictions: the fused softmax's
#: unaligned-row bound (added after v7 from the v1-v7 misses, never timed on new shapes)
#: at small batches, with blocks of 32768 and 16384 elements (1536 x 21000 and 2560 x
#: 12100, N not a multiple of 16; no unaligned row with a block above 16384 was timed
#: before) and an aligned control (2048 x 16000, a 16384 block); layer norm's
#: small-batch class with the records model unchanged (1536 x 7400 fp16 unaligned, an
#: 8192 block; 2304 x 14336 bf16 aligned, a 16384 block) and a large batch (30720 x
#: 1700 fp16); attention causal bf16 at head dimension 64, fp16 at 128 and a long
#: sequence in bf16. Shapes in no earlier case list.
CASES_V8: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 1536, "N": 21000}, "float32"),
    ("softmax", {"M": 2560, "N": 12100}, "float32"),
    ("softmax", {"M": 2048, "N": 16000}, "float32"),
    ("layer_norm", {"M": 1536, "N": 7400}, "float16"),
    ("layer_norm", {"M": 2304, "N": 14336}, "bfloat16"),
    ("layer_norm", {"M": 30720, "N": 1700}, "float16"),
    ("attention", {"heads": 18, "N": 6144, "d": 64, "causal": 1}, "bfloat16"),
    ("attention", {"heads": 40, "N": 2304, "d": 128}, "float16"),
    ("attention", {"heads": 5, "N": 16384, "d": 64}, "bfloat16"),
]
#: The ninth check (session 13), fixed after the v8 run and the fused softmax's cap (6e118f2: the
#: unaligned bound off above 16384-element blocks, chosen on v8 alone) and before its predictions
#: and any layer-norm model change of the session: softmax fp32 with unaligned 32768-element blocks
#: at two small batches (2048 x 26010, 896 x 30500) and an unaligned 16384 block at a larger one
#: (4608 x 13900); layer norm at a small batch with an unaligned 8192 block (1280 x 6600 fp16), an
#: aligned 16384 block (3328 x 11264 bf16) and an unaligned 4096 block (12288 x 2600 bf16);
#: attention causal fp16 at head dimension 64, bf16 at 128 and a long sequence (24576) in fp16.
#: Shapes in no earlier case list.
CASES_V9: list[tuple[str, dict[str, int], str]] = [
    ("softmax", {"M": 2048, "N": 26010}, "float32"),
    ("softmax", {"M": 896, "N": 30500}, "float32"),
    ("softmax", {"M": 4608, "N": 13900}, "float32"),
    ("layer_norm", {"M": 1280, "N": 6600}, "float16"),
    ("layer_norm", {"M": 3328, "N": 11264}, "bfloat16"),
    ("layer_norm", {"M": 12288, "N": 2600}, "bfloat16"),
    ("attention", {"heads": 24, "N": 4096, "d": 64, "causal": 1}, "float16"),
    ("attention", {"heads": 32, "N": 2560, "d": 128}, "bfloat16"),
    ("attention", {"heads": 3, "N": 24576, "d": 64}, "float16"),
]
CASE_SETS = {"v1": CASES_V1, "v2": CASES_V2, "v3": CASES_V3, "v4": CASES_V4, "v5": CASES_V5,
             "v6": CASES_V6, "v7": CASES_V7, "v8": CASES_V8,
             "v9": CASES_V9}
#: Default predictions file and measured folder of each case set.
SET_FILES = {"v1": ("autotune_kernels_predictions.csv", "autotune_kernels"),
             "v2": ("autotune_kernels_v2_predictions.csv", "autotune_kernels_v2"),
             "v3": ("autotune_kernels_v3_predictions.csv", "autotune_kernels_v3"),
             "v4": ("autotune_kernels_v4_predictions.csv", "autotune_kernels_v4"),
             "v5": ("autotune_kernels_v5_predictions.csv", "autotune_kernels_v5"),
             "v6": ("autotune_kernels_v6_predictions.csv", "autotune_kernels_v6"),
             "v7": ("autotune_kernels_v7_predictions.csv", "autotune_kernels_v7"),
             "v8": ("autotune_kernels_v8_predictions.csv", "autotune_kernels_v8"),
             "v9": ("autotune_kernels_v9_predictions.csv", "autotune_kernels_v9")}
CASES = CASES_V1
WARPS = (1, 2, 4, 8, 16, 32)


def case_id(kernel: str, shape: dict[str, int], dtype: str) -> str:
    return kernel + ":" + "x".join(f"{k}{v}" for k, v in shape.items()) + ":" + dtype


def next_pow2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def configs_for(kernel: str, shape: dict[str, int], dtype: str) -> list[Any]:
    """The reference config list of a case (see the module docstring)."""
    from autotile.tuner import LaunchConfig

    if kernel == "softmax":
        return [LaunchConfig({"BLOCK_SIZE": next_pow2(shape["N"])}, num_warps=w, num_stages=1)
                for w in WARPS]
    if kernel == "layer_norm":
        item = 2 if dtype in ("float16", "bfloat16") else 4
        block = min(65536 // item, next_pow2(shape["N"]))
        return [LaunchConfig({"BLOCK_SIZE": block}, num_warps=w, num_stages=1) for w in WARPS]
    out = []
    for bm in (64, 128):
        for bn in (32, 64, 128):
            for s in (2, 3, 4):
                for w in (4, 8):
                    if bm * bn < 128 * 128 and w == 8:  # tutorial 06's keep()
                        continue
                    out.append(LaunchConfig({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w,
                                            num_stages=s))
    return out


def config_text(c: Any) -> str:
    kw = " ".join(f"{k}={v}" for k, v in c.kwargs.items())
    return f"{kw} w{c.num_warps} s{c.num_stages}"


class Case:
    """One kernel at one shape: its arguments, grid, key, reference and launch."""

    def __init__(self, kernel: str, shape: dict[str, int], dtype: str, lib: Any) -> None:
        self.kernel, self.shape, self.dtype, self.lib = kernel, shape, dtype, lib
        self.id = case_id(kernel, shape, dtype)
        self.configs = configs_for(kernel, shape, dtype)

    # -- host (numpy) arguments for the model --------------------------------------
    def host_args(self) -> tuple[Any, dict[str, Any], Any]:
        """(kernel fn, named args with numpy stand-ins, grid callable)."""
        import numpy as np

        import autotile.kernels as K

        s, d = self.shape, self.dtype
        npd = {"float16": np.float16, "bfloat16": np.float16, "float32": np.float32}[d]
        if self.kernel == "softmax":
            M, N = s["M"], s["N"]
            x = np.zeros((M, N), npd)
            named = {"output_ptr": np.zeros((M, N), np.float32), "input_ptr": x,
                     "input_row_stride": N, "output_row_stride": N, "n_cols": N}
            return K.softmax_kernel, named, (M,)
        if self.kernel == "layer_norm":
            M, N = s["M"], s["N"]
            named = {"X": np.zeros((M, N), npd), "Y": np.zeros((M, N), npd),
                     "W": np.zeros(N, npd), "B": np.zeros(N, npd),
                     "Mean": np.zeros(M, np.float32), "Rstd": np.zeros(M, np.float32),
                     "stride": N, "N": N, "eps": 1e-5}
            return K.layer_norm_fwd_kernel, named, (M,)
        H, N, D = s["heads"], s["N"], s["d"]
        q = np.zeros((H, N, D), npd)
        named = {"Q": q, "K": q.copy(), "V": q.copy(), "O": q.copy(),
                 "L": np.zeros((H, N), np.float32), "sm_scale": 1.0 / math.sqrt(D),
                 "N_CTX": N, **{f"stride_{x}{a}": v for x in "qkvo"
                                for a, v in zip("bnd", (N * D, D, 1))},
                 "stride_lb": N, "HEAD_DIM": D, "CAUSAL": bool(s.get("causal", 0))}
        return K.attn_fwd_kernel, named, lambda meta: (-(-N // meta["BLOCK_M"]), H)

    # -- device arguments ------------------------------------------------------------
    def build(self) -> None:
        import torch

        s = self.shape
        dt = getattr(torch, self.dtype)
        torch.manual_seed(0)
        if self.kernel == "softmax":
            M, N = s["M"], s["N"]
            self.x = torch.randn((M, N), device="cuda", dtype=dt)
            self.y = torch.empty((M, N), device="cuda", dtype=torch.float32)
            self.args = (self.y, self.x, self.x.stride(0), self.y.stride(0), N)
            self.extra: dict[str, Any] = {}
            self.grid: Any = (M,)
            self.key = ["n_cols"]
            self.out = self.y
            self.ref = lambda: torch.softmax(self.x.float(), dim=1)
            self.torch_fn = lambda: torch.softmax(self.x, dim=1)
        elif self.kernel == "layer_norm":
            M, N = s["M"], s["N"]
            self.x = torch.randn((M, N), device="cuda", dtype=dt)
            self.w = torch.randn(N, device="cuda", dtype=dt)
            self.b = torch.randn(N, device="cuda", dtype=dt)
            self.y = torch.empty_like(self.x)
            mean = torch.empty(M, device="cuda", dtype=torch.float32)
            rstd = torch.empty(M, device="cuda", dtype=torch.float32)
            self.args = (self.x, self.y, self.w, self.b, mean, rstd, self.x.stride(0), N, 1e-5)
            self.extra = {}
            self.grid = (M,)
            self.key = ["N"]
            self.out = self.y
            F = torch.nn.functional
            self.ref = lambda: F.layer_norm(self.x.float(), (N,), self.w.float(),
                                            self.b.float(), 1e-5)
            self.torch_fn = lambda: F.layer_norm(self.x, (N,), self.w, self.b, 1e-5)
        else:
            H, N, D = s["heads"], s["N"], s["d"]
            self.q = torch.randn((H, N, D), device="cuda", dtype=dt)
            self.k = torch.randn((H, N, D), device="cuda", dtype=dt)
            self.v = torch.randn((H, N, D), device="cuda", dtype=dt)
            self.o = torch.empty_like(self.q)
            lse = torch.empty((H, N), device="cuda", dtype=torch.float32)
            st = []
            for t in (self.q, self.k, self.v, self.o):
                st += [t.stride(0), t.stride(1), t.stride(2)]
            self.args = (self.q, self.k, self.v, self.o, lse, 1.0 / math.sqrt(D), N, *st,
                         lse.stride(0))
            causal = bool(s.get("causal", 0))
            self.extra = {"HEAD_DIM": D, "CAUSAL": causal}
            self.grid = lambda meta: (-(-N // meta["BLOCK_M"]), H)
            self.key = ["N_CTX"]
            self.out = self.o
            F = torch.nn.functional
            self.ref = lambda: F.scaled_dot_product_attention(
                self.q[None].float(), self.k[None].float(), self.v[None].float(),
                is_causal=causal)[0]
            self.torch_fn = lambda: F.scaled_dot_product_attention(
                self.q[None], self.k[None], self.v[None], is_causal=causal)

    def rel_error(self) -> float:
        ref = self.ref()
        return float((self.out.float() - ref).norm() / ref.norm())

    def fn(self) -> Any:
        import autotile.kernels as K

        return {"softmax": K.softmax_kernel, "layer_norm": K.layer_norm_fwd_kernel,
                "attention": K.attn_fwd_kernel}[self.kernel]


# ------------------------------------------------------------------ predict (CPU)
def predict(args: argparse.Namespace) -> None:
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.tuner._perf_model import PerfModel

    rows = []
    for kernel, shape, dtype in CASE_SETS[args.cases]:
        if args.kernels and kernel not in args.kernels:
            continue
        case = Case(kernel, shape, dtype, None)
        fn, named, grid = case.host_args()
        pm = PerfModel(fn, H200_MEASURED_L2, grid)
        t0 = time.perf_counter()
        for c in case.configs:
            r = pm.estimate(**named, **c.all_kwargs())
            rows.append({"case": case.id, "config": config_text(c), "status": r.status,
                         "pred_time_s": r.metrics.get("time_s", "") if r.ok else "",
                         "reason": r.error or ""})
        log(f"{case.id}: {len(case.configs)} configs predicted in "
            f"{time.perf_counter() - t0:.1f} s")
    with open(args.predictions, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    log(f"wrote {len(rows)} rows to {args.predictions}")


# ------------------------------------------------------------------ time (GPU)
def tune_autotile(case: Case, tuning: CsvOut, **options: Any) -> Any:
    """Tune ``case`` with ``autotile.autotune`` (default settings, or ``options``); the pick."""
    import torch

    from autotile.tuner import autotune

    cache = fresh_triton_cache()
    tuner = autotune(configs=case.configs, key=case.key, backend="gpu",
                     cache_dir=tempfile.mkdtemp(prefix="autotile_cache_"), **options)(case.fn())
    case.out.zero_()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuner[case.grid](*case.args, **case.extra)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    err = case.rel_error()
    counts = {s: sum(r.status == s for r in tuner.history)
              for s in ("ok", "pruned", "infeasible", "failed", "wrong")}
    best = tuner.best_config
    model = {config_text(r.config): r.metrics.get("model_time_s") for r in tuner.history}
    timed = {config_text(r.config): {**autotile_timings(r),
                                     "compiled_by": tuner.compiled_by.get(r.config)}
             for r in tuner.history if "first_time_s" in r.metrics}
    tuning.write({"case": case.id, "tuner": "autotile", "wall_s": wall,
                  "n_compiled": tuner.n_compiled, "n_timed": tuner.n_timed,
                  "pick": config_text(best), "rel_error": err,
                  **{f"n_{k}": v for k, v in counts.items()},
                  "model_times": json.dumps(model), "triton_cache": cache,
                  "compile_mode": tuner.compile_mode, "autotile_times": json.dumps(timed),
                  "phase_s": json.dumps(tuner.phase_s), "bench_share": tuner.bench_share,
                  "n_bench": tuner.n_bench, "bench_ms": tuner.bench_ms,
                  "prior_note": tuner.prior_note})
    phases = ", ".join(f"{k} {v:.2f}" for k, v in tuner.phase_s.items())
    log(f"{case.id} autotile: {wall:.2f}s ({phases}; {tuner.n_bench} do_bench at share "
        f"{tuner.bench_share:.2f}; prior: {tuner.prior_note}), "
        f"compiled {tuner.n_compiled} ({tuner.compile_mode}), timed {tuner.n_timed}, "
        f"pick {config_text(best)}, {counts}, rel err {err:.2e}")
    return best


def autotile_timings(r: Any) -> dict[str, Any]:
    """What ``@autotune`` measured of one config, seconds: the first pass, every re-time
    round in order (``inf`` written as None), the re-timings it took part in, the time it
    was ranked by, and whether a compile was running in the process meanwhile."""
    m = r.metrics
    rounds = [m[f"retime_round_{j}_s"] for j in range(sum(k.startswith("retime_round_")
                                                          for k in m))]
    return {"first_s": m.get("first_time_s"),
            "retime_s": [t if math.isfinite(t) else None for t in rounds],
            "n_retimes": int(m.get("n_retimes", 0)), "time_s": r.time_s,
            "compile_s": m.get("compile_s"), "compile_running": bool(m.get("compile_running"))}


def tune_triton(case: Case, tuning: CsvOut) -> tuple[Any, Any]:
    import torch
    import triton

    from autotile.measure.gpu import port_to_triton
    from autotile.tuner import LaunchConfig

    cache = fresh_triton_cache()
    fn = case.fn()
    kern = getattr(port_to_triton([fn]), fn.__name__)
    configs = [triton.Config(dict(lc.kwargs), num_warps=lc.num_warps, num_stages=lc.num_stages)
               for lc in case.configs]
    tuned = triton.autotune(configs=configs, key=case.key)(kern)
    case.out.zero_()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuned[case.grid](*case.args, **case.extra)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    err = case.rel_error()
    bc = tuned.best_config
    best = LaunchConfig(dict(bc.kwargs), num_warps=bc.num_warps, num_stages=bc.num_stages)
    tuning.write({"case": case.id, "tuner": "triton", "wall_s": wall,
                  "n_compiled": len(configs), "n_timed": len(configs),
                  "pick": config_text(best), "rel_error": err, "n_ok": "", "n_pruned": 0,
                  "n_infeasible": "", "n_failed": "", "n_wrong": "", "model_times": "",
                  "triton_cache": cache, "compile_mode": "in-process", "autotile_times": "",
                  "phase_s": "", "bench_share": "", "n_bench": len(configs), "bench_ms": "",
                  "prior_note": ""})
    log(f"{case.id} triton.autotune: {wall:.2f}s, pick {config_text(best)}, rel err {err:.2e}")
    return best, kern


def time_rounds(case: Case, kern: Any, picks: dict[str, Any], n_rounds: int, seed: int,
                rounds_out: CsvOut, summary_out: CsvOut) -> None:
    import numpy as np
    import torch
    import triton.testing

    items: dict[str, Any] = {f"cfg_{i:02d}": c for i, c in enumerate(case.configs)}
    items.update(picks)
    fns: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, cfg in items.items():
        def fn(cfg: Any = cfg) -> None:
            kern[case.grid](*case.args, **case.extra, **cfg.kwargs, num_warps=cfg.num_warps,
                            num_stages=cfg.num_stages)
        try:
            fn()
            torch.cuda.synchronize()
            fns[name] = fn
        except Exception as exc:  # noqa: BLE001 - out of resources etc.
            skipped[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    fns["torch"] = case.torch_fn
    rng = np.random.default_rng(seed)
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(n_rounds):
        for j in rng.permutation(len(names)):
            name = names[j]
            ms = float(triton.testing.do_bench(fns[name], warmup=5, rep=25))
            times[name].append(ms)
            cfg = items.get(name)
            rounds_out.write({"case": case.id, "round": r, "name": name,
                              "config": config_text(cfg) if cfg is not None else "torch",
                              "ms": ms})
    med = {n: float(np.median(v)) for n, v in times.items()}
    best = min(v for n, v in med.items() if n.startswith("cfg_"))
    for name in list(items) + ["torch"]:
        cfg = items.get(name)
        row = {"case": case.id, "name": name,
               "config": config_text(cfg) if cfg is not None else "torch"}
        if name in skipped:
            summary_out.write({**row, "median_ms": "", "pct_of_best": "", "error": skipped[name]})
            continue
        summary_out.write({**row, "median_ms": med[name], "pct_of_best": 100.0 * best / med[name],
                           "error": ""})
    log(f"{case.id}: best {best:.4f} ms; " + ", ".join(
        f"{n} {100 * best / med[n]:.1f}%" for n in picks if n in med)
        + f", torch {100 * best / med['torch']:.1f}%")


def warm_process() -> float:
    """Pay the process's one-time compile costs before any tuning; return the seconds.

    Triton's first compile in a process cost 1.5 s on the H200, later ones 0.07-0.2 s
    (``diag_compile_cost.py``, v4 session): whichever tuner ran first in the process
    paid about 1.3 s more (v4: autotile, on its first case). The vector-add kernel,
    ported to Triton and compiled and launched once into a throwaway cache directory,
    pays it here, so that neither tuner's timed tuning does; each still starts from a
    cold Triton cache of its own.
    """
    import torch

    from autotile.kernels import add_kernel
    from autotile.measure.gpu import port_to_triton

    t0 = time.perf_counter()
    fresh_triton_cache()
    kern = port_to_triton([add_kernel]).add_kernel
    x = torch.ones(1000, device="cuda")
    out = torch.empty_like(x)
    kern[(4,)](x, x, out, 1000, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    if not bool((out == 2).all()):
        raise RuntimeError("the warm-up kernel gave a wrong result")
    return time.perf_counter() - t0


def time_on_gpu(args: argparse.Namespace) -> int:
    import torch
    import triton

    args.out.mkdir(parents=True, exist_ok=True)
    warm_s = None
    if not args.no_process_warmup:
        try:
            warm_s = warm_process()
            log(f"process warm-up (one-time compile costs): {warm_s:.2f} s")
        except Exception:  # noqa: BLE001 - the cases still run, as v1-v4 did
            log(f"process warm-up FAILED (the first case pays the one-time costs):\n"
                f"{traceback.format_exc()}")
    env = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__,
           "torch": torch.__version__, "rounds": args.rounds, "process_warmup_s": warm_s}
    (args.out / "autotune_kernels_env.json").write_text(json.dumps(env))
    tuning = CsvOut(args.out / "autotune_kernels_tuning.csv")
    rounds_out = CsvOut(args.out / "autotune_kernels_rounds.csv")
    summary = CsvOut(args.out / "autotune_kernels_summary.csv")
    n_failed = 0
    t0 = time.perf_counter()
    for i, (kernel, shape, dtype) in enumerate(CASE_SETS[args.cases]):
        if args.kernels and kernel not in args.kernels:
            continue
        case = Case(kernel, shape, dtype, None)
        if time.perf_counter() - t0 > args.deadline_s:
            log(f"{case.id}: skipped, past --deadline-s")
            continue
        try:
            case.build()
            picks: dict[str, Any] = {}
            kern = None
            for which in (("autotile", "triton") if i % 2 == 0 else ("triton", "autotile")):
                if which == "autotile":
                    picks["autotile_pick"] = tune_autotile(case, tuning)
                else:
                    picks["triton_pick"], kern = tune_triton(case, tuning)
            time_rounds(case, kern, picks, args.rounds, args.seed, rounds_out, summary)
        except Exception:  # noqa: BLE001 - log the case and go on
            n_failed += 1
            log(f"{case.id} FAILED:\n{traceback.format_exc()}")
        finally:
            torch.cuda.empty_cache()
    log(f"done; {n_failed} case(s) failed")
    return 1 if n_failed else 0


# ------------------------------------------------------------------ report
def report(args: argparse.Namespace) -> None:
    import numpy as np

    preds: dict[str, dict[str, float]] = {}
    for r in csv.DictReader(open(args.predictions)):
        if r["pred_time_s"]:
            preds.setdefault(r["case"], {})[r["config"]] = float(r["pred_time_s"])
    summ: list[dict[str, str]] = []
    tun: list[dict[str, str]] = []
    for d in args.measured:  # one folder per device call
        summ += list(csv.DictReader(open(d / "autotune_kernels_summary.csv")))
        tun += list(csv.DictReader(open(d / "autotune_kernels_tuning.csv")))
    zs = []
    print("| case | best config (ms) | autotile pick | triton pick | model zero-shot | "
          "autotile wall | triton wall | torch |")
    print("|---|---|---|---|---|---|---|---|")
    for kernel, shape, dtype in CASE_SETS[args.cases]:
        cid = case_id(kernel, shape, dtype)
        rows = [r for r in summ if r["case"] == cid and r["median_ms"]]
        if not rows:
            continue
        cfg = {r["config"]: float(r["median_ms"]) for r in rows if r["name"].startswith("cfg_")}
        best_c = min(cfg, key=cfg.get)
        pct = {r["name"]: float(r["pct_of_best"]) for r in rows}
        p = preds.get(cid, {})
        zero = min(p, key=p.get) if p else None
        z = 100.0 * cfg[best_c] / cfg[zero] if zero in cfg else float("nan")
        zs.append(z)
        wall = {r["tuner"]: float(r["wall_s"]) for r in tun if r["case"] == cid}
        print(f"| {cid} | {best_c} ({cfg[best_c]:.4f}) | {pct.get('autotile_pick', 0):.1f}% | "
              f"{pct.get('triton_pick', 0):.1f}% | {zero}: {z:.1f}% | "
              f"{wall.get('autotile', math.nan):.2f} s | {wall.get('triton', math.nan):.2f} s | "
              f"{pct.get('torch', 0):.1f}% |")
    if zs:
        print(f"zero-shot median {np.median(zs):.1f}%, min {min(zs):.1f}%")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("predict", "time", "report"), required=True)
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    p.add_argument("--cases", choices=tuple(CASE_SETS), default="v1",
                   help="the case list (v1: the 2026-12-02 run; v2: session 8's new shapes; "
                        "v3: session 9's; v4: session 10's; v5: session 11's; v6 and v7: "
                        "session 12's; v8 and v9: session 13's)")
    p.add_argument("--predictions", type=Path, default=None,
                   help="default: data/autotune_kernels[_v2]_predictions.csv of --cases")
    p.add_argument("--measured", type=Path, nargs="+", default=None,
                   help="folder(s) of --part time output, one per device call "
                        "(default: data/autotune_kernels[_v2])")
    p.add_argument("--kernels", nargs="*", default=None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deadline-s", type=float, default=400.0)
    p.add_argument("--no-process-warmup", action="store_true",
                   help="do not pay the process's one-time compile costs before the first "
                        "case (v1-v4 did not: the first tuner of the first case paid them)")
    args = p.parse_args(argv)
    pred_name, measured_name = SET_FILES[args.cases]
    if args.predictions is None:
        args.predictions = DATA / pred_name
    if args.measured is None:
        args.measured = [DATA / measured_name]
    if args.part == "predict":
        predict(args)
        return 0
    if args.part == "time":
        return time_on_gpu(args)
    report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
