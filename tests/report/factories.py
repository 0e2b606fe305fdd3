"""Hand-built recommendations for report tests.

Chips come from the fixture catalog in ``tests/report/catalog`` (made-up parts with fixed
numbers) and every prediction is set by hand, so goldens do not move when the catalog data or
the performance model is tuned.
"""

from __future__ import annotations

import importlib
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chipwise.advise import (
    AdviseRequest,
    Excluded,
    Finding,
    Option,
    ProjectFacts,
    Reason,
    Recommendation,
)
from chipwise.advise.confidence import Confidence
from chipwise.cost import RunCost, ServingCost
from chipwise.hardware import Catalog, Chip, load_catalog
from chipwise.perf.base import Breakdown, InferPrediction, MemoryUse, Plan, TrainPrediction
from chipwise.units import GB, SECONDS_PER_DAY
from chipwise.workload.ir import Inference, Training, TransformerSpec, Workload

CATALOG_FILES = Path(__file__).parent / "catalog"
FIXED_CONFIDENCE = Confidence(kind="gpu", rows=20, median_abs_error=0.1, p90_abs_error=0.3)


def fixture_catalog(tmp: Path) -> Catalog:
    """The two-chip fixture catalog, copied into ``tmp`` and loaded from there."""
    root = tmp / "catalog"
    shutil.copytree(CATALOG_FILES, root)
    return load_catalog(root)


@contextmanager
def fixed_confidence() -> Iterator[None]:
    """``recommend`` with a fixed confidence band instead of running the validation harness
    (tens of seconds on first use; the band does not change the pick)."""
    module = importlib.import_module("chipwise.advise.recommend")
    with pytest.MonkeyPatch.context() as mp:
        if hasattr(module, "confidence_for_chip"):
            mp.setattr(module, "confidence_for_chip", lambda chip, phase="train": FIXED_CONFIDENCE)
        if hasattr(module, "training_confidence"):
            mp.setattr(module, "training_confidence", lambda: {"all": FIXED_CONFIDENCE})
        yield


def small_model(name: str = "golden-7b") -> TransformerSpec:
    return TransformerSpec(
        name=name,
        n_layers=32,
        d_model=4096,
        n_heads=32,
        n_kv_heads=8,
        head_dim=128,
        d_ff=14336,
        vocab_size=128256,
    )


def _train_option(
    chip: Chip, catalog: Catalog, *, chips: int, step_s: float, plan: Plan, weights_gb: float
) -> Option:
    pred = TrainPrediction(
        workload="golden-7b",
        chip_id=chip.id,
        chips=chips,
        precision="bf16",
        plan=plan,
        seq_len=4096,
        global_batch=256,
        step_time_s=step_s,
        model_flops_per_token=5.0e10,
        memory=MemoryUse(
            weights_bytes=weights_gb * GB,
            grads_bytes=weights_gb * GB,
            optimizer_bytes=4 * weights_gb * GB,
            activations_bytes=20 * GB,
            other_bytes=3 * GB,
        ),
        capacity_bytes=chip.hbm_capacity_bytes,
        breakdown=Breakdown(compute_s=step_s * 0.8, communication_s=step_s * 0.2),
    )
    steps = 1000
    seconds = steps * step_s
    offer = catalog.offers_for(chip.id)[0]
    usd = seconds / 3600 * chips * offer.usd_per_chip_hour
    cost = RunCost(
        chip_id=chip.id,
        chips=chips,
        offer=offer,
        steps=steps,
        tokens=steps * 4096 * 256,
        wall_clock_s=seconds,
        chip_hours=seconds / 3600 * chips,
        usd_per_step=usd / steps,
        usd_per_million_tokens=usd / (steps * 4096 * 256 / 1e6),
        usd_total=usd,
    )
    return Option(
        chip=chip,
        chips=chips,
        prediction=pred,
        days=seconds / SECONDS_PER_DAY,
        usd=usd,
        price_label=(
            f"{offer.provider} {offer.pricing} {offer.region} "
            f"(${offer.usd_per_chip_hour:.2f}/chip-h; {offer.source}, {offer.date})"
        ),
        cost=cost,
        energy=None,
        kwh=chips * 0.7 * seconds / 3600,
    )


def training_recommendation(catalog: Catalog, *, name: str = "golden-7b") -> Recommendation:
    """A training answer: the TPU is the pick on cost, the GPU is faster."""
    gpu, tpu = catalog.chip("testgpu-80"), catalog.chip("testtpu-v1")
    g = _train_option(gpu, catalog, chips=8, step_s=20.0, plan=Plan(fsdp=8), weights_gb=2.0)
    t = _train_option(tpu, catalog, chips=8, step_s=25.0, plan=Plan(fsdp=8), weights_gb=2.0)
    request = AdviseRequest(
        workload=Workload(model=small_model(name), phase=Training(seq_len=4096, global_batch=256)),
        tokens=1e9,
        objective="cost",
        framework="jax",
        chip_ids=("testgpu-80", "testtpu-v1"),
        project=ProjectFacts(
            path="examples/<project>",
            frameworks=("jax",),
            verdicts={"nvidia-cuda": "runs", "google-tpu": "runs-with-changes"},
            findings=(
                Finding(
                    name="flash-attn",
                    where="train.py:12",
                    platform="google-tpu",
                    verdict="runs-with-changes",
                    porting="Pallas splash attention",
                    effort="medium",
                ),
            ),
            cuda_specific=(),
        ),
    )
    reasons = (
        Reason(
            rule="google-ecosystem",
            situation="Already deep in Google Cloud / TensorFlow / JAX → TPU",
            favours="tpu",
            text="The code uses jax, and the best TPU option is 1.04× cheaper.",
            evidence=("best TPU: testtpu-v1 ×8", "best GPU: testgpu-80 ×8"),
            agrees_with_article=True,
        ),
    )
    return Recommendation(
        request=request,
        options=(t, g),
        excluded=(Excluded(chip_id="other-chip", why="no bf16 support"),),
        best_gpu=g,
        best_tpu=t,
        pick=t,
        reasons=reasons,
        confidence=FIXED_CONFIDENCE,
        notes=("a note for the golden",),
    )


def serving_recommendation(catalog: Catalog) -> Recommendation:
    """A serving answer on the GPU only."""
    gpu = catalog.chip("testgpu-80")
    offer = catalog.offers_for(gpu.id)[0]
    pred = InferPrediction(
        workload="golden-7b",
        chip_id=gpu.id,
        chips=1,
        precision="bf16",
        plan=Plan(),
        batch=64,
        input_len=1024,
        output_len=256,
        ttft_s=0.5,
        tpot_s=0.02,
        memory=MemoryUse(weights_bytes=16 * GB, kv_cache_bytes=20 * GB, other_bytes=2 * GB),
        capacity_bytes=gpu.hbm_capacity_bytes,
        prefill=Breakdown(compute_s=0.5),
        decode=Breakdown(memory_s=0.02),
    )
    usd = 24 * offer.usd_per_chip_hour
    option = Option(
        chip=gpu,
        chips=1,
        prediction=pred,
        days=None,
        usd=usd,
        price_label=f"{offer.provider} {offer.pricing} {offer.region}",
        cost=ServingCost(
            chip_id=gpu.id,
            offer=offer,
            chips_per_replica=1,
            replicas=1,
            requests_per_day=1e5,
            capacity_requests_per_day=2e5,
            output_tokens_per_day=2.56e7,
            tokens_per_day=1.28e8,
            usd_per_day=usd,
            usd_per_million_output_tokens=usd / 25.6,
            usd_per_million_tokens=usd / 128,
            usd_per_million_output_tokens_at_capacity=usd / 51.2,
        ),
        energy=None,
        kwh=12.0,
    )
    request = AdviseRequest(
        workload=Workload(
            model=small_model(), phase=Inference(batch=64, input_len=1024, output_len=256)
        ),
        requests_per_day=1e5,
        objective="cost",
        chip_ids=("testgpu-80",),
    )
    return Recommendation(
        request=request,
        options=(option,),
        excluded=(),
        best_gpu=option,
        best_tpu=None,
        pick=option,
        reasons=(),
        confidence=None,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def running_app(what: str = "the web server") -> Iterator[int]:
    """The web app under uvicorn on a free 127.0.0.1 port in a daemon thread (the confidence
    band fixed, so answers come fast); yields the port and stops the server on exit."""
    uvicorn = pytest.importorskip("uvicorn")
    from chipwise.report.web import create_app

    with fixed_confidence():
        port = _free_port()
        config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                pytest.fail(f"{what} did not start within 30 s")
            time.sleep(0.05)
        yield port
        server.should_exit = True
        thread.join(timeout=10)
