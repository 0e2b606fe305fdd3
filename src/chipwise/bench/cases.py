"""One microbenchmark case: what to run and the work it does.

Its own module so that ``micro`` (which cases to run) and ``backends`` (how to run one) both
import it, and neither imports the other's module back (``micro`` -> ``backends`` -> ``cases``).
The counting conventions of ``flops`` and ``n_bytes`` are in ``micro``'s module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One benchmark case: what to run and the work it does (see the module table)."""

    benchmark: str
    dtype: str
    dims: tuple[int, ...]  # gemm (M, N, K); memory (n,); attention (B, H, S, Dh); all-reduce (d, n)
    flops: float
    n_bytes: float

    @property
    def shape(self) -> str:
        return "x".join(str(d) for d in self.dims)

    @property
    def label(self) -> str:
        return f"{self.benchmark} {self.shape} {self.dtype}"
