"""TritonMeasurer paths that need no GPU: lazy import, the clear error, pure helpers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.kernels import add_kernel, attn_fwd_kernel, matmul_kernel, softmax_kernel
from autotile.measure.gpu._triton_measurer import (
    TRITON_HEADER,
    TRITON_KERNELS,
    TRITON_METRICS,
    TritonMeasurer,
    classify_error,
    default_rtol,
    kernel_flops,
    relative_error,
    triton_source,
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


def test_import_autotile_measure_imports_neither_triton_nor_torch() -> None:
    p = _run("""
        import json, sys
        import autotile, autotile.measure, autotile.measure.gpu._triton_measurer
        import autotile.measure.gpu._calibrate
        print(json.dumps({m: m in sys.modules for m in ("triton", "torch")}))
    """)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"triton": False, "torch": False}


def test_constructing_without_triton_raises_clear_error() -> None:
    # triton made unimportable: the error names what is missing
    p = _run("""
        import sys
        sys.modules["triton"] = None
        from autotile.errors import MeasureError
        from autotile.measure.gpu._triton_measurer import TritonMeasurer
        try:
            TritonMeasurer("matmul", {"M": 64, "N": 64, "K": 64})
        except MeasureError as e:
            print("ERR", e)
    """)
    assert p.returncode == 0, p.stderr
    out = p.stdout.strip()
    assert out.startswith("ERR TritonMeasurer needs triton and a CUDA device: cannot import")


def test_constructing_without_cuda_device_raises_clear_error() -> None:
    try:
        import torch
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        pytest.skip("torch/triton not installed: covered by the no-triton test")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(MeasureError, match=r"^TritonMeasurer needs triton and a CUDA device: "
                                           r"torch.cuda.is_available\(\) is False$"):
        TritonMeasurer("matmul", {"M": 64, "N": 64, "K": 64})


def test_bad_kernel_name_and_shape_are_measure_errors_before_any_import() -> None:
    with pytest.raises(MeasureError, match="one of the registered kernels .* got 'conv2d'"):
        TritonMeasurer("conv2d", {"M": 1})
    with pytest.raises(MeasureError, match=r"takes the keys \('M', 'N', 'K'\), missing \['K'\]"):
        TritonMeasurer("matmul", {"M": 64, "N": 64})
    with pytest.raises(MeasureError, match="takes dtype in .* got dtype='int8'"):
        TritonMeasurer("matmul", {"M": 64, "N": 64, "K": 64}, dtype="int8")


def test_triton_source_is_the_kernel_source_under_triton_imports() -> None:
    src = triton_source([matmul_kernel])
    assert src.startswith(TRITON_HEADER)
    body = src[len(TRITON_HEADER):]
    assert body.startswith("@jit\ndef matmul_kernel(")
    # byte-identical to the function in its module file
    import inspect

    file_text = open(inspect.getsourcefile(matmul_kernel.fn)).read()  # type: ignore[arg-type]
    assert body.rstrip("\n") in file_text
    assert "autotile" not in body
    compile(src, "<ported>", "exec")  # valid Python
    two = triton_source([add_kernel, softmax_kernel])
    assert two.count("@jit\ndef ") == 2 and "def add_kernel(" in two


def test_every_triton_kernel_is_in_the_library() -> None:
    import importlib

    for name, spec in TRITON_KERNELS.items():
        fn = spec.kernel.__name__
        k = getattr(importlib.import_module(spec.kernel.fn.__module__), fn)
        assert k is spec.kernel and f"def {fn}(" in triton_source([k]), name
    assert TRITON_KERNELS["flash_attention"].kernel is attn_fwd_kernel


def test_triton_source_rejects_non_top_level_functions() -> None:
    def local_kernel() -> None:
        pass

    with pytest.raises(MeasureError, match="not a top-level function"):
        triton_source([local_kernel])
    with pytest.raises(MeasureError, match="cannot find the source file"):
        triton_source([len])


def test_classify_error_follows_types_messages_and_chains() -> None:
    class OutOfResources(Exception):
        pass

    class CompilationError(Exception):
        pass

    assert classify_error(OutOfResources("out of resource: shared memory, Required: 262144, "
                                         "Hardware limit: 232448")) == "infeasible"
    assert classify_error(RuntimeError("ptxas error: Entry function uses too much shared "
                                       "data")) == "infeasible"
    assert classify_error(ValueError("unsupported layout")) == "failed"
    try:
        try:
            raise OutOfResources("shared memory")
        except OutOfResources as inner:
            raise CompilationError("while compiling") from inner
    except CompilationError as outer:
        assert classify_error(outer) == "infeasible"


def test_relative_error_and_tolerances() -> None:
    ref = np.arange(1.0, 5.0)
    assert relative_error(ref, ref) == 0.0
    assert relative_error(ref * 1.01, ref) == pytest.approx(0.01)
    assert np.isnan(relative_error(np.array([1.0, np.nan, 3.0, 4.0]), ref))
    with pytest.raises(MeasureError, match="one shape"):
        relative_error(ref, ref[:2])
    assert default_rtol("float16") == 1e-2 and default_rtol("float32") == 5e-3


def test_kernel_flops_match_the_model_measurer() -> None:
    assert kernel_flops("matmul", {"M": 8192, "N": 8192, "K": 8192}) == 2.0 * 8192**3
    assert kernel_flops("softmax_fused", {"M": 4, "N": 10}) == 200.0
    assert kernel_flops("flash_attention", {"N": 1024, "d": 64, "heads": 2}) == \
        4.0 * 1024 * 1024 * 64 * 2
    with pytest.raises(MeasureError):
        kernel_flops("conv", {})
    assert TRITON_METRICS[:2] == ("time_s", "tflops")
