"""GPU hardware profiles: the constants the traffic and time models read.

:class:`HardwareProfile` is a frozen, validated, JSON round-trippable record.
:data:`H100_SXM` (the default everywhere) and :data:`H200` are the shipped
instances; every constant cites its source in the instance's docstring and in
``docs/gpu_model.md``. Users define their own profile with the constructor or
``dataclasses.replace(H100_SXM, ...)``.

Units are in the field names: ``_bytes`` are bytes, ``_per_s`` are per second,
``_hz`` is hertz, ``_s`` seconds.

References
----------
.. [1] NVIDIA, "NVIDIA H100 Tensor Core GPU Architecture" whitepaper, v1.04
   (2022-2023), Table 3 "Comparison of NVIDIA A100 and H100 Data Center GPUs"
   and §"H100 SM architecture".
.. [2] NVIDIA, "NVIDIA H100 Tensor Core GPU" datasheet (2023), table
   "Technical Specifications", H100 SXM column.
.. [3] NVIDIA, "NVIDIA H200 Tensor Core GPU" product brief / datasheet (2024),
   table "Technical Specifications", H200 SXM column.
.. [4] NVIDIA, "CUDA C++ Programming Guide", §"Compute Capabilities", table
   "Technical Specifications per Compute Capability", column 9.0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any

from autotile.errors import MeasureError

__all__ = ["HardwareProfile", "H100_SXM", "H200", "HARDWARE"]

_INT_FIELDS = ("n_sms", "l2_bytes", "smem_per_sm_bytes", "smem_per_block_bytes",
               "regs_per_sm", "max_regs_per_thread", "max_warps_per_sm",
               "max_blocks_per_sm")
_FLOAT_FIELDS = ("hbm_bytes_per_s", "fp16_tensor_flops_per_s", "bf16_tensor_flops_per_s",
                 "fp32_flops_per_s", "clock_hz")


@dataclass(frozen=True)
class HardwareProfile:
    """Constants of one GPU, as read by the L2 simulator and the time model.

    Parameters
    ----------
    name : str
        Label, e.g. ``"H100-SXM5-80GB"``.
    n_sms : int
        Streaming multiprocessors.
    l2_bytes : int
        L2 capacity in bytes (modelled as one fully associative LRU).
    hbm_bytes_per_s : float
        Peak DRAM (HBM) bandwidth, bytes/s.
    fp16_tensor_flops_per_s, bf16_tensor_flops_per_s : float
        Dense (no sparsity) tensor-core peak with fp32 accumulation, FLOP/s
        (one multiply-add = 2 FLOP).
    fp32_flops_per_s : float
        Non-tensor fp32 (FMA pipe) peak, FLOP/s.
    smem_per_sm_bytes : int
        Shared memory per SM available to resident blocks, bytes.
    smem_per_block_bytes : int
        Largest shared memory one block may use (opt-in maximum), bytes.
    regs_per_sm : int
        32-bit registers per SM.
    max_regs_per_thread : int
        Largest register count per thread.
    max_warps_per_sm : int
        Resident warps per SM.
    max_blocks_per_sm : int
        Resident blocks (programs) per SM.
    launch_overhead_s : float
        Fixed time added to every kernel launch, seconds.
    clock_hz : float
        SM clock the peak rates are quoted at, Hz.

    Raises
    ------
    MeasureError
        If a count is not a positive int, a rate not a positive finite float,
        ``launch_overhead_s`` negative, or ``smem_per_block_bytes >
        smem_per_sm_bytes``.

    Examples
    --------
    >>> import dataclasses
    >>> mine = dataclasses.replace(H100_SXM, name="H100-50MiB", l2_bytes=50 * 2**20)
    >>> HardwareProfile.from_json(mine.to_json()) == mine
    True
    """

    name: str
    n_sms: int
    l2_bytes: int
    hbm_bytes_per_s: float
    fp16_tensor_flops_per_s: float
    bf16_tensor_flops_per_s: float
    fp32_flops_per_s: float
    smem_per_sm_bytes: int
    smem_per_block_bytes: int
    regs_per_sm: int
    max_regs_per_thread: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    launch_overhead_s: float
    clock_hz: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise MeasureError(f"name must be a non-empty str, got name={self.name!r}")
        for f in _INT_FIELDS:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise MeasureError(f"{f} must be a positive int, got {f}={v!r}")
        for f in _FLOAT_FIELDS:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise MeasureError(f"{f} must be a positive finite number, got {f}={v!r}")
            object.__setattr__(self, f, float(v))
        lo = self.launch_overhead_s
        if isinstance(lo, bool) or not isinstance(lo, (int, float)) or not (
                math.isfinite(lo) and lo >= 0):
            raise MeasureError(f"launch_overhead_s must be a finite number >= 0, got {lo!r}")
        object.__setattr__(self, "launch_overhead_s", float(lo))
        if self.smem_per_block_bytes > self.smem_per_sm_bytes:
            raise MeasureError(
                "smem_per_block_bytes <= smem_per_sm_bytes must hold, got "
                f"smem_per_block_bytes={self.smem_per_block_bytes}, "
                f"smem_per_sm_bytes={self.smem_per_sm_bytes}")

    def tensor_flops_per_s(self, dtype: str) -> float:
        """Dense tensor-core peak for operands of ``dtype``, FLOP/s.

        Parameters
        ----------
        dtype : {"float16", "bfloat16", "float32"}
            Operand dtype; ``"float32"`` uses the non-tensor fp32 peak (the
            interpreter's ``tl.dot`` on fp32 is modelled without TF32).

        Returns
        -------
        float

        Raises
        ------
        MeasureError
            For another dtype.
        """
        table = {"float16": self.fp16_tensor_flops_per_s,
                 "bfloat16": self.bf16_tensor_flops_per_s,
                 "float32": self.fp32_flops_per_s}
        if dtype not in table:
            raise MeasureError(f"dtype must be one of {sorted(table)}, got dtype={dtype!r}")
        return table[dtype]

    def to_json(self) -> str:
        """Return the profile as JSON text; :meth:`from_json` inverts it."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, data: str | Mapping[str, Any]) -> HardwareProfile:
        """Rebuild a profile from :meth:`to_json` output (text or dict).

        Raises
        ------
        MeasureError
            If a field is missing or unknown, or a value is invalid.
        """
        d = dict(json.loads(data) if isinstance(data, str) else data)
        names = {f.name for f in fields(cls)}
        if set(d) != names:
            raise MeasureError(
                f"a HardwareProfile needs exactly the fields {sorted(names)}; missing "
                f"{sorted(names - set(d))}, unknown {sorted(set(d) - names)}")
        return cls(**d)


H100_SXM = HardwareProfile(
    name="H100-SXM5-80GB",
    n_sms=132,                      # [1] Table 3: 132 SMs (SXM5)
    l2_bytes=50_000_000,            # [1] Table 3 "50 MB", read as decimal (seed: 3,051 x 16 KB)
    hbm_bytes_per_s=3.35e12,        # [2] "GPU memory bandwidth 3.35 TB/s" (H100 SXM)
    fp16_tensor_flops_per_s=989.4e12,   # [2] "FP16 Tensor Core 1,979 TFLOPS*" (*sparse) / 2
    bf16_tensor_flops_per_s=989.4e12,   # [2] "BF16 Tensor Core 1,979 TFLOPS*" / 2
    fp32_flops_per_s=67e12,         # [2] "FP32 67 teraFLOPS"
    smem_per_sm_bytes=228 * 1024,   # [4] cc 9.0: 228 KB shared memory per SM
    smem_per_block_bytes=227 * 1024,  # [4] cc 9.0: 227 KB max per block (opt-in)
    regs_per_sm=65536,              # [4] cc 9.0: 64 K 32-bit registers per SM
    max_regs_per_thread=255,        # [4] cc 9.0: 255 registers per thread
    max_warps_per_sm=64,            # [4] cc 9.0: 64 resident warps per SM
    max_blocks_per_sm=32,           # [4] cc 9.0: 32 resident blocks per SM
    launch_overhead_s=3e-6,         # assumption (docs/gpu_model.md §Launch), to be calibrated
    clock_hz=1.83e9,                # 989.4e12 / (132 SM * 4096 FLOP/clk/SM [1] §SM)
)
"""NVIDIA H100 SXM5 80 GB, the default profile.

Sources: SM count and L2 from the H100 whitepaper [1]_ Table 3; HBM3
bandwidth, dense fp16/bf16 tensor and fp32 rates from the H100 datasheet
[2]_ (the datasheet's tensor figures are with 2:4 sparsity, so the dense rate
is half); shared memory, registers, warps and blocks per SM from the CUDA
programming guide's compute-capability 9.0 column [4]_. ``l2_bytes`` is the
whitepaper's "50 MB" read as 50e6 bytes, which is what the lecture notes'
"3,051 tiles of 16 KB" (floor(50e6 / 16384)) uses; the CUDA runtime reports
50 MiB (52,428,800 B, 3,200 such tiles); use ``dataclasses.replace`` for that.
``clock_hz`` is derived: the dense fp16 rate over 132 SMs x 4,096 FLOP per
clock per SM (4 tensor cores x 512 fp16 FMA). ``launch_overhead_s`` is an
assumption (a few microseconds, the usual order of an empty-kernel launch),
not a datasheet value.

References
----------
.. [1] NVIDIA H100 Tensor Core GPU Architecture whitepaper v1.04.
.. [2] NVIDIA H100 Tensor Core GPU datasheet.
.. [4] CUDA C++ Programming Guide, Compute Capabilities, cc 9.0.
"""

H200 = HardwareProfile(
    name="H200-SXM-141GB",
    n_sms=132,                      # same GH100 die as H100 SXM5 [1], [3]
    l2_bytes=50_000_000,            # same die, 50 MB [1]
    hbm_bytes_per_s=4.8e12,         # [3] "GPU memory bandwidth 4.8 TB/s" (HBM3e)
    fp16_tensor_flops_per_s=989.4e12,   # [3] "FP16 Tensor Core 1,979 TFLOPS*" (*sparse) / 2
    bf16_tensor_flops_per_s=989.4e12,   # [3] "BF16 Tensor Core 1,979 TFLOPS*" / 2
    fp32_flops_per_s=67e12,         # [3] "FP32 67 TFLOPS"
    smem_per_sm_bytes=228 * 1024,   # [4] cc 9.0
    smem_per_block_bytes=227 * 1024,  # [4] cc 9.0
    regs_per_sm=65536,              # [4] cc 9.0
    max_regs_per_thread=255,        # [4] cc 9.0
    max_warps_per_sm=64,            # [4] cc 9.0
    max_blocks_per_sm=32,           # [4] cc 9.0
    launch_overhead_s=3e-6,         # assumption, as for H100_SXM
    clock_hz=1.83e9,                # same derivation as H100_SXM
)
"""NVIDIA H200 SXM 141 GB: the H100 SXM5 die with HBM3e.

Sources: bandwidth, tensor and fp32 rates from the H200 product brief /
datasheet [3]_ (tensor figures halved, they are quoted with sparsity); SM
count and L2 are those of the GH100 die in the H100 SXM5 [1]_ (the H200 brief
does not list them); per-SM limits from compute capability 9.0 [4]_.

References
----------
.. [1] NVIDIA H100 Tensor Core GPU Architecture whitepaper v1.04.
.. [3] NVIDIA H200 Tensor Core GPU product brief / datasheet.
.. [4] CUDA C++ Programming Guide, Compute Capabilities, cc 9.0.
"""

#: Shipped profiles by short name.
HARDWARE: Mapping[str, HardwareProfile] = MappingProxyType(
    {"h100_sxm": H100_SXM, "h200": H200})
