"""Hand-built chips, predictions, offers and catalogs for the cost tests (no data files)."""

from __future__ import annotations

from chipwise.hardware.catalog import Catalog
from chipwise.hardware.chip import Chip, Interconnect, PriceOffer, Purchase
from chipwise.perf.base import Breakdown, InferPrediction, MemoryUse, Plan, TrainPrediction


def make_chip(
    chip_id: str = "gpu-x",
    *,
    kind: str = "gpu",
    tdp_w: float = 700.0,
    bf16_flops_per_s: float = 1e15,
    purchasable: bool = True,
    typical_w: float | None = None,
) -> Chip:
    return Chip(
        id=chip_id,
        name=chip_id.upper(),
        vendor="google" if kind == "tpu" else "nvidia",
        kind=kind,
        architecture="test",
        aliases=(),
        dense_flops_per_s={"bf16": bf16_flops_per_s},
        hbm_capacity_bytes=80e9,
        hbm_bytes_per_s=3e12,
        memory_type="HBM3",
        unit_name="SM",
        units=100,
        matrix_units_per_unit=4,
        matrix_unit_dim=None,
        clock_hz=None,
        l2_bytes=None,
        sram_per_unit_bytes=None,
        vector_flops_per_s=None,
        tdp_w=tdp_w,
        typical_w=typical_w,
        scale_up=Interconnect(name="link", bytes_per_s_per_chip=1e11),
        scale_out=None,
        clouds=("gcp",) if kind == "tpu" else ("aws", "gcp"),
        purchasable=purchasable,
        software=("xla",) if kind == "tpu" else ("cuda",),
        release_year=2024,
    )


def train_pred(
    *,
    chip_id: str = "gpu-x",
    chips: int = 8,
    step_time_s: float = 2.0,
    seq_len: int = 1000,
    global_batch: int = 1000,
    model_flops_per_token: float = 6e9,
    breakdown: Breakdown | None = None,
) -> TrainPrediction:
    return TrainPrediction(
        workload="test-model",
        chip_id=chip_id,
        chips=chips,
        precision="bf16",
        plan=Plan(dp=chips),
        seq_len=seq_len,
        global_batch=global_batch,
        step_time_s=step_time_s,
        model_flops_per_token=model_flops_per_token,
        memory=MemoryUse(weights_bytes=1e9),
        capacity_bytes=80e9,
        breakdown=Breakdown(compute_s=step_time_s) if breakdown is None else breakdown,
    )


def infer_pred(
    *,
    chip_id: str = "gpu-x",
    chips: int = 2,
    batch: int = 8,
    input_len: int = 1000,
    output_len: int = 200,
    ttft_s: float = 0.5,
    tpot_s: float = 0.02,
    prefill: Breakdown | None = None,
    decode: Breakdown | None = None,
) -> InferPrediction:
    return InferPrediction(
        workload="test-model",
        chip_id=chip_id,
        chips=chips,
        precision="bf16",
        plan=Plan(tp=chips),
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        ttft_s=ttft_s,
        tpot_s=tpot_s,
        memory=MemoryUse(weights_bytes=1e9),
        capacity_bytes=80e9,
        prefill=Breakdown(compute_s=ttft_s) if prefill is None else prefill,
        decode=Breakdown(memory_s=tpot_s) if decode is None else decode,
    )


def make_offer(
    usd_per_chip_hour: float = 3.0,
    *,
    chip_id: str = "gpu-x",
    provider: str = "aws",
    provider_kind: str = "hyperscaler",
    pricing: str = "on-demand",
) -> PriceOffer:
    return PriceOffer(
        chip_id=chip_id,
        provider=provider,
        provider_kind=provider_kind,
        pricing=pricing,
        usd_per_chip_hour=usd_per_chip_hour,
        region="test-region-1",
        instance="test.8x",
        source="test fixture",
        date="2026-01-01",
    )


def make_catalog(
    chips: tuple[Chip, ...] = (),
    offers: tuple[PriceOffer, ...] = (),
    purchases: tuple[Purchase, ...] = (),
) -> Catalog:
    return Catalog(chips=chips, offers=offers, purchases=purchases)


def make_purchase(usd: float = 25_000.0, chip_id: str = "gpu-x") -> Purchase:
    return Purchase(chip_id=chip_id, usd=usd, source="test fixture", date="2026-01-01")
