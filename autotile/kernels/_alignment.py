"""Which global loads and stores Triton vectorises, from its divisibility-16 specialisation.

Triton compiles a kernel per *specialisation* of its arguments: an integer
argument that is a multiple of 16 (and a pointer whose address is) is marked
``tt.divisibility = 16``; any other integer is only known to be divisible by 1
(an integer equal to 1 becomes the constant 1) [1]_. Triton's axis analysis
then bounds the vector width of a ``tl.load``/``tl.store`` along its
contiguous dimension by the divisibility of every term of the address (in
bytes, over the element size) and by the constancy of the mask [2]_. The
software pipeliner turns a load into an asynchronous copy (``cp.async`` into a
shared-memory ring of ``num_stages`` buffers) only when one thread's vector is
at least 32 bits (``isSmallLoad``: ``cp.async`` copies 4, 8 or 16 bytes) [3]_;
a smaller load stays a synchronous load into registers, is written to a single
shared-memory buffer for ``tl.dot`` and is not pipelined.

For the library matmul (:func:`~autotile.kernels.matmul_kernel`, row-major
operands with unit inner strides) that gives, with ``d(x) = 16 if x % 16 == 0
else 1`` and ``v_max = 16 // itemsize`` elements (a 128-bit vector; the
16-byte pointer alignment caps it):

* A tile, contiguous along K: ``min(v_max, d(stride_am), d(K))``; ``d(K)``
  comes from the K-tail mask ``offs_k < K - k * BLOCK_K``;
* B tile, contiguous along N: ``min(v_max, d(stride_bk), d(N))``; ``d(N)``
  comes from ``offs_bn = (...) % N``, whose contiguity is ``gcd(BLOCK_N,
  d(N))``;
* C store, contiguous along N: ``min(v_max, d(stride_cm), d(N))`` (the mask
  ``offs_cn < N``).

So at ``N = 5000`` (fp16) every B load is a 2-byte scalar load that the
pipeliner leaves synchronous, while ``K = 2000`` keeps A's 16-byte async copies.

References
----------
.. [1] Triton 3.x, ``python/triton/runtime/jit.py`` (``compute_spec_key``:
   ``"D"`` for ``v % 16 == 0`` or ``data_ptr() % 16 == 0``, ``"1"`` for an int
   equal to 1) and the NVIDIA backend's ``tt.divisibility = 16`` argument
   attribute.
.. [2] Triton 3.x, ``lib/Analysis/AxisInfo.cpp``: ``RemOpAxisInfoVisitor``
   (contiguity of ``x % n`` is ``gcd(contiguity(x), divisibility(x),
   divisibility(n))``), ``CmpOpAxisInfoVisitor`` (constancy of ``arange <
   scalar``), ``AddPtrOp`` divisibility in bytes, and
   ``ModuleAxisInfoAnalysis::getAlignment``/``getMaskAlignment``.
.. [3] Triton 3.x, ``lib/Dialect/TritonGPU/Transforms/Pipeliner/AssignLatencies.cpp``
   (``isSmallLoad``: ``width = vec * bitwidth``, not pipelined when ``width <
   32``; ``isPipeliningBeneficial``: at least 4 consecutive bytes for
   ``cp.async``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "TRITON_DIVISIBILITY",
    "MAX_VECTOR_BYTES",
    "specialized_divisibility",
    "vector_elems",
    "is_async_copy",
    "OperandAccess",
    "MatmulAccess",
    "matmul_access",
]

#: The divisibility Triton's specialisation records for an integer or pointer argument [1].
TRITON_DIVISIBILITY = 16
#: Widest vector one thread loads or stores: 128 bits, also the pointer alignment assumed.
MAX_VECTOR_BYTES = 16
#: Smallest per-thread vector the pipeliner copies asynchronously (``cp.async``), bytes [3].
MIN_ASYNC_COPY_BYTES = 4


def specialized_divisibility(value: int) -> int:
    """The divisibility Triton knows of an integer argument: 16 if ``value % 16 == 0``, else 1.

    Parameters
    ----------
    value : int
        The argument (a size or a stride, in elements).

    Returns
    -------
    int
        16 or 1. Triton does not record smaller powers of two: 3000 (a
        multiple of 8) is known only as a multiple of 1.
    """
    return TRITON_DIVISIBILITY if int(value) % TRITON_DIVISIBILITY == 0 else 1


def vector_elems(itemsize: int, *bounds: int) -> int:
    """Elements one thread moves per instruction along a contiguous dimension.

    ``min(16 // itemsize, d(b) for b in bounds)``, with ``d`` from
    :func:`specialized_divisibility`: every address term and mask bound of the
    contiguous dimension caps the vector (the tile itself is at least 16
    elements wide, so it does not).

    Parameters
    ----------
    itemsize : int
        Bytes per element (2 for fp16/bf16, 4 for fp32).
    *bounds : int
        The integers (strides, sizes) whose divisibility bounds the vector.

    Returns
    -------
    int
        Elements per thread and instruction, >= 1.
    """
    v = max(1, MAX_VECTOR_BYTES // int(itemsize))
    for b in bounds:
        v = min(v, specialized_divisibility(b))
    return v


def is_async_copy(vector: int, itemsize: int) -> bool:
    """Whether the pipeliner copies a load asynchronously: ``vector * itemsize >= 4`` bytes [3]."""
    return int(vector) * int(itemsize) >= MIN_ASYNC_COPY_BYTES


@dataclass(frozen=True)
class OperandAccess:
    """How one operand of a kernel is moved.

    Attributes
    ----------
    vector_elems : int
        Elements per thread and instruction.
    itemsize : int
        Bytes per element.
    """

    vector_elems: int
    itemsize: int

    @property
    def vector_bytes(self) -> int:
        """Bytes per thread and instruction."""
        return self.vector_elems * self.itemsize

    @property
    def is_async(self) -> bool:
        """For a load: copied asynchronously and software-pipelined (:func:`is_async_copy`)."""
        return is_async_copy(self.vector_elems, self.itemsize)


@dataclass(frozen=True)
class MatmulAccess:
    """Vector widths of the library matmul's A and B loads and C store.

    Attributes
    ----------
    a, b, c : OperandAccess
    """

    a: OperandAccess
    b: OperandAccess
    c: OperandAccess

    def n_buffers(self, num_stages: int) -> tuple[int, int]:
        """Shared-memory buffers of the A and B tiles: ``num_stages`` if async, else 1."""
        return (int(num_stages) if self.a.is_async else 1,
                int(num_stages) if self.b.is_async else 1)


def matmul_access(M: int, N: int, K: int, itemsize: int, *, stride_am: int | None = None,
                  stride_bk: int | None = None, stride_cm: int | None = None,
                  out_itemsize: int | None = None) -> MatmulAccess:
    """Vector widths of :func:`~autotile.kernels.matmul_kernel`'s loads and store.

    Operands are row-major with unit inner strides (the kernel spec's layout);
    the leading strides default to ``K``, ``N`` and ``N``.

    Parameters
    ----------
    M, N, K : int
        Problem shape (``M`` bounds no contiguous dimension, so it never
        matters).
    itemsize : int
        Bytes per A/B element.
    stride_am, stride_bk, stride_cm : int, optional
        Leading strides in elements (default ``K``, ``N``, ``N``).
    out_itemsize : int, optional
        Bytes per C element (default ``itemsize``).

    Returns
    -------
    MatmulAccess

    Examples
    --------
    >>> acc = matmul_access(3000, 5000, 2000, 2)
    >>> acc.a.vector_elems, acc.a.is_async, acc.b.vector_elems, acc.b.is_async
    (8, True, 1, False)
    """
    del M
    sam = K if stride_am is None else stride_am
    sbk = N if stride_bk is None else stride_bk
    scm = N if stride_cm is None else stride_cm
    osz = itemsize if out_itemsize is None else out_itemsize
    return MatmulAccess(OperandAccess(vector_elems(itemsize, sam, K), int(itemsize)),
                        OperandAccess(vector_elems(itemsize, sbk, N), int(itemsize)),
                        OperandAccess(vector_elems(osz, scm, N), int(osz)))
