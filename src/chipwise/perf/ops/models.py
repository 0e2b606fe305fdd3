"""Pick the per-op model for a chip: ``GpuModel`` for GPUs and GEMM-engine ASICs, else TPU.

Gaudi (MMEs) and Trainium (NeuronCores) are, like GPUs, matrix engines fed from HBM by
kernels the framework launches one by one; the GPU-style model (tiles over compute units,
waves, launch overhead) fits them, with their own ``Efficiency`` from ``efficiency.toml``.
"""

from __future__ import annotations

from chipwise.errors import CatalogError
from chipwise.hardware.chip import Chip
from chipwise.perf.base import PerfModel
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.ops.gpu import GpuModel
from chipwise.perf.ops.tpu import TpuModel


def model_for(chip: Chip, efficiency: Efficiency | None = None) -> PerfModel:
    """The per-op performance model for ``chip`` (``efficiency`` overrides the packaged one)."""
    if chip.kind in ("gpu", "asic"):
        return GpuModel(chip, efficiency)
    if chip.kind == "tpu":
        return TpuModel(chip, efficiency)
    raise CatalogError(f"{chip.id}: no performance model for kind {chip.kind!r} (gpu|tpu|asic)")
