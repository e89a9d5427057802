"""Run every library kernel's source unchanged under triton.jit (TRITON_INTERPRET=1).

Executed in a subprocess by test_triton_compat.py; prints one line per kernel
and exits non-zero on the first mismatch.
"""

import ast
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

import autotile.kernels as K  # noqa: E402

KDIR = Path(K.__file__).parent
T = torch.from_numpy
HEADER = "import triton\nimport triton.language as tl\nfrom triton import jit\n\n\n"


def port(stem):
    src = (KDIR / f"{stem}.py").read_text()
    lines = src.splitlines()
    chunks = [
        "\n".join(lines[min([d.lineno for d in n.decorator_list]) - 1 : n.end_lineno])
        for n in ast.parse(src).body
        if isinstance(n, ast.FunctionDef) and any(
            getattr(d, "id", None) == "jit" for d in n.decorator_list)
    ]
    path = Path(tempfile.mkdtemp()) / f"ported{stem}.py"
    path.write_text(HEADER + "\n\n\n".join(chunks) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def check(name, got, ref, tol):
    err = float(np.abs(np.asarray(got, np.float64) - np.asarray(ref, np.float64)).max())
    print(f"{name}: max abs err {err:.2e}")
    if not err <= tol:
        raise SystemExit(f"{name}: error {err} > {tol}")


rng = np.random.default_rng(0)
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))

m = port("_vector_add")
x, y = rng.random((2, 1000), dtype=np.float32)
o = np.empty_like(x)
m.add_kernel[(4,)](T(x), T(y), T(o), 1000, BLOCK_SIZE=256)
check("add_kernel", o, x + y, 0)

m = port("_softmax")
x = rng.standard_normal((9, 77)).astype(np.float32)
M, N = x.shape
ref = K.softmax_reference(x)
o = np.empty_like(x)
m.softmax_kernel[(M,)](T(o), T(x), N, N, N, BLOCK_SIZE=128)
check("softmax_kernel", o, ref, 1e-6)
mx, s = np.empty(M, np.float32), np.empty(M, np.float32)
z, e = np.empty_like(x), np.empty_like(x)
m.row_max_kernel[(M,)](T(x), T(mx), N, N, BLOCK_SIZE=32)
m.sub_row_kernel[(M,)](T(x), T(mx), T(z), N, N, N, BLOCK_SIZE=32)
m.exp_kernel[(M,)](T(z), T(e), N, N, N, BLOCK_SIZE=32)
m.row_sum_kernel[(M,)](T(e), T(s), N, N, BLOCK_SIZE=32)
m.div_row_kernel[(M,)](T(e), T(s), T(o), N, N, N, BLOCK_SIZE=32)
check("softmax naive (5 kernels)", o, ref, 1e-6)

a = rng.standard_normal((72, 40)).astype(np.float16)
b = rng.standard_normal((40, 88)).astype(np.float16)
ref = K.matmul_reference(a, b, np.float32)
m = port("_matmul")
for order in ("grouped", "row_major"):
    c = np.zeros((72, 88), np.float32)
    m.matmul_kernel[(5 * 3,)](T(a), T(b), T(c), 72, 88, 40, 40, 1, 88, 1, 88, 1,
                              BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2, PID_ORDER=order)
    check(f"matmul_kernel {order}", c, ref, 1e-4)
m = port("_persistent_matmul")
c = np.zeros((72, 88), np.float32)
m.matmul_persistent_kernel[(4,)](T(a), T(b), T(c), 72, 88, 40, 40, 1, 88, 1, 88, 1,
                                 BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2, NUM_SMS=4)
check("matmul_persistent_kernel", c, ref, 1e-4)
# Triton 3.4's interpreter wants descriptor strides that are multiples of 16 elements (its
# message says bytes; the GPU needs 16 bytes): K = 48 and N = 96 here
a2 = rng.standard_normal((72, 48)).astype(np.float16)
b2 = rng.standard_normal((48, 96)).astype(np.float16)
c = np.zeros((72, 96), np.float32)
m.matmul_descriptor_persistent_kernel[(4,)](T(a2), T(b2), T(c), 72, 96, 48, 48, 96, 96,
                                            BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2,
                                            NUM_SMS=4)
check("matmul_descriptor_persistent_kernel", c, K.matmul_reference(a2, b2, np.float32), 1e-4)

m = port("_flash_attention")
for causal in (False, True):
    n, d = 100, 32
    q, k, v = (rng.standard_normal((1, n, d)).astype(np.float32) for _ in range(3))
    o = np.empty_like(q)
    lse = np.empty((1, n), np.float32)

    def es(t):
        return [st // 4 for st in t.strides]

    m.attn_fwd_kernel[(4, 1)](T(q), T(k), T(v), T(o), T(lse), 1 / np.sqrt(d), n, *es(q),
                              *es(k), *es(v), *es(o), n, HEAD_DIM=d, BLOCK_M=32, BLOCK_N=16,
                              CAUSAL=causal)
    ro, rl = K.attention_reference(q, k, v, causal=causal)
    check(f"attn_fwd_kernel causal={causal}", o, ro, 1e-6)
    check(f"attn_fwd_kernel lse causal={causal}", lse, rl, 1e-5)

m = port("_layer_norm")
x = rng.standard_normal((5, 300)).astype(np.float32)
w, bb = rng.standard_normal((2, 300)).astype(np.float32)
y = np.empty_like(x)
mean, rstd = np.empty(5, np.float32), np.empty(5, np.float32)
m.layer_norm_fwd_kernel[(5,)](T(x), T(y), T(w), T(bb), T(mean), T(rstd), 300, 300, 1e-5,
                              BLOCK_SIZE=128)
check("layer_norm_fwd_kernel", y, K.layer_norm_reference(x, w, bb)[0], 1e-5)

m = port("_l2_norm")
o = np.empty(5, np.float32)
m.l2_norm_kernel[(5,)](T(x), T(o), 300, 300, BLOCK=512)
check("l2_norm_kernel", o, K.l2_norm_reference(x), 1e-5)
x16 = x.astype(np.float16)  # tl.sqrt takes float32/float64 only: the kernel must widen
o16 = np.empty(5, np.float16)
m.l2_norm_kernel[(5,)](T(x16), T(o16), 300, 300, BLOCK=512)
check("l2_norm_kernel float16", o16, K.l2_norm_reference(x16), 2e-2)
print("ALL KERNELS RAN UNDER triton.jit")
