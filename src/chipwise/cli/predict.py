"""``chipwise predict``: how one workload runs on N chips of one kind.

JSON (``--json``, ``schema_version`` 1) always carries ``kind`` (train | infer | primitive),
``workload``, ``chip``, ``chips``, ``precision`` and ``assumptions`` ([{name, value,
source}]). Training adds ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_chip``,
``model_flops_per_token``, ``mfu``, ``memory_per_chip_bytes``, ``memory`` (by kind),
``capacity_per_chip_bytes``, ``fits``, ``plan``, ``plan_source`` (given | planner),
``plan_reason`` and ``breakdown`` ({compute_s, memory_s, communication_s, bubble_s,
overhead_s, total_s}). Serving adds ``ttft_s``, ``tpot_s``, ``tokens_per_s``,
``output_tokens_per_s``, the same memory/plan keys, ``breakdown`` (one request: prefill +
output_len decode steps) and ``prefill_breakdown``/``decode_breakdown``. Primitives add
``time_s``, ``achieved_tflops``, ``achieved_bytes_per_s``, ``bus_bytes_per_s``.

``--calibrated [--db PATH]`` predicts with the chip's latest calibration from the measurement
store (``chipwise bench`` then ``chipwise calibrate``) in place of the packaged efficiency
parameters; every replaced assumption then cites that calibration. JSON adds
``efficiency`` (packaged | calibrated).

``price`` (training and serving) is the chip's cheapest on-demand offer (else the cheapest of
any pricing; ``--prices FILE`` adds or replaces offers for the run) as ``{"offer": {...as
'chipwise prices --json'}, "usd_per_step"}`` (training) or ``"usd_per_million_output_tokens"``
(serving, replica full); null without a price.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from chipwise.cli.app import app
from chipwise.cli.defaults import (
    INFER_BATCH,
    INFER_INPUT_LEN,
    INFER_OUTPUT_LEN,
    MAX_SPEC_TOKENS,
    TRAIN_GLOBAL_BATCH,
    TRAIN_SEQ_LEN,
)
from chipwise.cli.output import (
    console,
    print_json,
    quiet_option,
    refuse_other_phase_options,
    show_progress,
    spinner,
)
from chipwise.errors import MeasurementError, WorkloadError
from chipwise.limits import (
    MAX_CHIPS,
    MAX_GLOBAL_BATCH,
    MAX_LATENCY_MS,
    MAX_RPS,
    MAX_SEQ_LEN,
    MAX_SERVE_BATCH,
)
from chipwise.units import format_bytes, format_count, format_rate, format_seconds

if TYPE_CHECKING:
    from chipwise.hardware import Chip, PriceOffer
    from chipwise.perf import Breakdown, InferPrediction, MemoryUse, Plan, Prediction
    from chipwise.workload.ir import Inference

JSON_SCHEMA_VERSION = 1


class PhaseChoice(StrEnum):
    train = "train"
    infer = "infer"


class PrecisionChoice(StrEnum):
    bf16 = "bf16"
    fp8 = "fp8"
    int8 = "int8"
    fp16 = "fp16"
    fp32 = "fp32"
    fp4 = "fp4"
    int4 = "int4"
    w8a16 = "w8a16"


class EngineChoice(StrEnum):
    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"
    jetstream = "jetstream"
    atom = "atom"


class SpecMethodChoice(StrEnum):
    mtp = "mtp"
    eagle = "eagle"


class MoeBackendChoice(StrEnum):
    default = "default"
    trtllm_gen = "trtllm-gen"
    marlin = "marlin"


class KvDtypeChoice(StrEnum):
    auto = "auto"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"


PRECISION_HELP = (
    "Matmul precision: bf16, fp16, fp32, fp8 (W8A8), int8 (W8A8), fp4 (NVFP4/MXFP4: W4A4 on "
    "chips with an fp4 rate; served weight-only elsewhere), int4 / w8a16 (weight-only W4A16 / "
    "W8A16: fewer weight bytes, bf16 math)."
)


@app.command("predict")
def predict_command(
    ctx: typer.Context,
    workload: str = typer.Argument(
        ...,
        metavar="WORKLOAD",
        help="Zoo id (llama3-8b), config.json path, or primitive (matmul:8192x8192x8192, "
        "copy:8589934592, allreduce:8589934592).",
    ),
    chip: str | None = typer.Option(
        None,
        "--chip",
        help="Chip id or alias, e.g. h100 or v5p, or a derived (hypothetical) chip, e.g. "
        "'h100-sxm:hbm_bandwidth*1.5,memory=141GB' (see docs/explore.md).",
    ),
    chip_file: Path | None = typer.Option(
        None,
        "--chip-file",
        help="A hypothetical chip: a TOML file in the catalog's schema (sources optional); "
        "instead of --chip.",
    ),
    chips: int = typer.Option(1, "--chips", min=1, max=MAX_CHIPS, help="Number of chips."),
    phase: PhaseChoice = typer.Option(
        PhaseChoice.train, "--phase", help="train (one training step) or infer (serving)."
    ),
    precision: PrecisionChoice = typer.Option(
        PrecisionChoice.bf16, "--precision", help=PRECISION_HELP, case_sensitive=False
    ),
    seq_len: int = typer.Option(
        TRAIN_SEQ_LEN, "--seq-len", min=1, max=MAX_SEQ_LEN, help="Train: tokens per sequence."
    ),
    global_batch: int = typer.Option(
        TRAIN_GLOBAL_BATCH,
        "--global-batch",
        min=1,
        max=MAX_GLOBAL_BATCH,
        help="Train: sequences per step.",
    ),
    batch: int = typer.Option(
        INFER_BATCH,
        "--batch",
        min=1,
        max=MAX_SERVE_BATCH,
        help="Infer: a static batch of requests, prefilled together then decoded (default load).",
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        min=1,
        max=MAX_SERVE_BATCH,
        help="Infer: closed loop of N clients on a continuously batching engine.",
    ),
    rps: float | None = typer.Option(
        None, "--rps", min=0.0, max=MAX_RPS, help="Infer: open loop, Poisson arrivals (requests/s)."
    ),
    max_throughput: bool = typer.Option(
        False,
        "--max-throughput",
        help="Infer: every request queued at once (MLPerf Offline, trtllm-bench): the engine "
        "at its batch, token and KV-cache limits.",
    ),
    server: bool = typer.Option(
        False,
        "--server",
        help="Infer: Poisson arrivals at the highest rate whose p99 TTFT/TPOT meet --ttft/--tpot "
        "(MLPerf Server).",
    ),
    ttft: float | None = typer.Option(
        None, "--ttft", min=0.0, max=MAX_LATENCY_MS, help="Infer: p99 TTFT target in ms (--server)."
    ),
    tpot: float | None = typer.Option(
        None, "--tpot", min=0.0, max=MAX_LATENCY_MS, help="Infer: p99 TPOT target in ms (--server)."
    ),
    input_len_std: float = typer.Option(
        0.0,
        "--input-len-std",
        min=0.0,
        max=MAX_SEQ_LEN,
        help="Infer: prompt length std (log-normal).",
    ),
    output_len_std: float = typer.Option(
        0.0,
        "--output-len-std",
        min=0.0,
        max=MAX_SEQ_LEN,
        help="Infer: output length std (log-normal).",
    ),
    lengths_file: Path | None = typer.Option(
        None,
        "--lengths",
        help="Infer: a CSV histogram with columns input_len,output_len[,count] (e.g. a "
        "dataset's length profile); replaces --input-len/--output-len.",
    ),
    max_num_seqs: int = typer.Option(
        0,
        "--max-num-seqs",
        min=0,
        max=MAX_SERVE_BATCH,
        help="Infer: engine's max running sequences (0 = the engine's own default, by "
        "release and GPU: vLLM 256 before v0.8.0, 1024 since on >= 70 GiB GPUs but A100; "
        "SGLang and TensorRT-LLM 2048).",
    ),
    max_num_tokens: int = typer.Option(
        0,
        "--max-num-tokens",
        min=0,
        max=MAX_SEQ_LEN,
        help="Infer: engine's tokens per step (0 = the engine's own default, by release, "
        "GPU and load).",
    ),
    slot_cache_len: int = typer.Option(
        0,
        "--slot-cache-len",
        min=0,
        max=MAX_SEQ_LEN,
        help="Infer, --engine jetstream: cache positions each decode slot reserves and its "
        "dense attention reads every step (jetstream-pytorch --max_cache_length, MaxText "
        "max_target_length; 0 = ragged attention over each sequence's context).",
    ),
    kv_dtype: KvDtypeChoice = typer.Option(
        KvDtypeChoice.auto, "--kv-dtype", help="Infer: KV-cache dtype (auto: from precision)."
    ),
    engine_name: EngineChoice = typer.Option(
        EngineChoice.vllm,
        "--engine",
        case_sensitive=False,
        help="Infer: serving engine, for how it sizes its KV cache (vllm, sglang: a share of "
        "total HBM; trtllm: a share of the HBM free after the weights) and its default "
        "batch limits; jetstream: fixed decode slots (--max-num-seqs), each prompt "
        "prefilled alone at a padded power-of-two length (TPU); atom: AMD's ATOM (AMD "
        "GPUs; whole prompts in prefill-only steps, 512 sequences / 16384 tokens).",
    ),
    engine_date: str = typer.Option(
        "",
        "--engine-date",
        help="Infer: YYYY-MM[-DD], the engine release of that date, whose default batch "
        "limits apply (default: the newest).",
    ),
    num_requests: int = typer.Option(
        0,
        "--num-requests",
        min=0,
        max=MAX_SERVE_BATCH,
        help="Infer: requests in a --max-throughput or --concurrency run (0 = an endless "
        "backlog / steady state; a closed loop's first wave then counts in its TTFT).",
    ),
    moe_backend: MoeBackendChoice = typer.Option(
        MoeBackendChoice.default,
        "--moe-backend",
        help="Infer: the engine's MoE kernels. default: its own (TensorRT-LLM's CUTLASS MoE, "
        "vLLM's and SGLang's); trtllm-gen: TRT-LLM-Gen's fused MoE (TensorRT-LLM moe_config "
        "backend TRTLLM, vLLM with VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1), which runs an "
        "MXFP4 checkpoint's experts (gpt-oss) on Blackwell at its own measured rates; "
        "marlin: the Marlin-MoE kernel for 4-bit experts with bf16 math (vLLM with "
        "VLLM_MXFP4_USE_MARLIN=1 on Hopper).",
    ),
    memory_fraction: float = typer.Option(
        0.0,
        "--memory-fraction",
        min=0.0,
        max=1.0,
        help="Infer: the engine's memory share as launched: vLLM --gpu-memory-utilization, "
        "SGLang --mem-fraction-static (of total memory), TensorRT-LLM "
        "free_gpu_memory_fraction (of the memory left free); sizes the KV cache "
        "(0 = the engine's default).",
    ),
    api: bool = typer.Option(
        False,
        "--api",
        help="Infer: the load is timed through the engine's OpenAI-compatible HTTP server "
        "(vllm bench serve, AIPerf, genai-perf): TTFT adds the server's own latency.",
    ),
    disaggregated: bool = typer.Option(
        False,
        "--disaggregated",
        help="Infer: separate prefill and decode replicas (Dynamo-style; needs dp >= 2): the "
        "split with the most throughput, or at --rps the lowest p99 latency.",
    ),
    prefill_pool: str | None = typer.Option(
        None,
        "--prefill-pool",
        help="Infer, with --disaggregated: the prefill pool's own layout, e.g. "
        "'instances=2,tp=4,ep=4,adp=1,max_num_tokens=12288' (ep defaults to tp); --plan then "
        "lays out the decode pool on the chips the pool leaves.",
    ),
    spec_tokens: int = typer.Option(
        0,
        "--spec-tokens",
        min=0,
        max=MAX_SPEC_TOKENS,
        help="Infer: speculative decoding's draft tokens per step, k (0 = off): the target "
        "verifies 1 + k tokens a sequence each step (engine loads only).",
    ),
    spec_accept: float = typer.Option(
        1.0,
        "--spec-accept",
        help="Infer: mean acceptance length with --spec-tokens, tokens a sequence emits per "
        "step (1 <= A <= 1 + k, as published: 'acceptance length'); an input, not predicted.",
    ),
    spec_method: SpecMethodChoice = typer.Option(
        SpecMethodChoice.mtp,
        "--spec-method",
        help="Infer: the drafter of --spec-tokens: mtp (DeepSeek-V3's MTP module, one MoE "
        "layer) or eagle (an EAGLE-3 head, one dense layer).",
    ),
    prefix_hit_rate: float = typer.Option(
        0.0,
        "--prefix-hit-rate",
        min=0.0,
        max=0.99,
        help="Infer: share of prompt tokens served from the prefix cache.",
    ),
    input_len: int = typer.Option(
        INFER_INPUT_LEN,
        "--input-len",
        min=1,
        max=MAX_SEQ_LEN,
        help="Infer: prompt tokens per request.",
    ),
    output_len: int = typer.Option(
        INFER_OUTPUT_LEN,
        "--output-len",
        min=0,
        max=MAX_SEQ_LEN,
        help="Infer: generated tokens per request.",
    ),
    plan: str | None = typer.Option(
        None,
        "--plan",
        help="A parallel plan, e.g. 'tp=8, pp=2, microbatch=1, recompute=selective' (keys: dp "
        "fsdp tp pp cp ep etp vp microbatch recompute adp; etp = the experts' tensor "
        "parallelism, 1 under ep; adp=1 = infer with attention data parallelism: each tp rank "
        "serves its own requests, experts split over the ranks). Unnamed axes are 1 and dp "
        "takes the chips left; without "
        "microbatch/recompute the planner picks them. Default: the planner chooses everything.",
    ),
    calibrated: bool = typer.Option(
        False, "--calibrated", help="Use the chip's calibration from the measurement store."
    ),
    db: Path | None = typer.Option(
        None,
        "--db",
        help="Measurement store for --calibrated. Default: $CHIPWISE_DB, else the user data dir.",
    ),
    prices: Path | None = typer.Option(
        None,
        "--prices",
        help="Your own prices, TOML or CSV in the offers schema (see 'chipwise prices'); the "
        "price row then names the file.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object (schema_version 1, see the module doc)."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Predict step time, throughput and memory of WORKLOAD on --chips x --chip."""
    from chipwise.bench.calibrate import calibrated_efficiency
    from chipwise.bench.store import resolve_db
    from chipwise.hardware import chip_option
    from chipwise.hardware.prices import run_catalog
    from chipwise.perf import decode_chips, predict
    from chipwise.workload.ir import Inference, Primitive, Training, Workload, parse_prefill_pool
    from chipwise.workload.lengths import read_lengths
    from chipwise.workload.load import load_workload_model

    refuse_other_phase_options(ctx, phase.value)
    with spinner(show_progress(quiet=quiet, as_json=as_json), f"reading {workload}"):
        model = load_workload_model(workload)
    if isinstance(model, Primitive) and model.kind == "matmul" and workload.count(":") < 2:
        model = replace(model, dtype=precision.value)  # no dtype in the string: --precision
    work = Workload(
        model=model,
        phase=Training(seq_len=seq_len, global_batch=global_batch)
        if phase is PhaseChoice.train
        else serving_phase(
            batch=batch,
            input_len=input_len,
            output_len=output_len,
            concurrency=concurrency,
            rps=rps,
            max_throughput=max_throughput,
            server=server,
            ttft_p99_s=(ttft or 0.0) / 1e3,
            tpot_p99_s=(tpot or 0.0) / 1e3,
            input_len_std=input_len_std,
            output_len_std=output_len_std,
            lengths=read_lengths(lengths_file) if lengths_file else (),
            max_num_seqs=max_num_seqs,
            max_num_tokens=max_num_tokens,
            slot_cache_len=slot_cache_len,
            kv_dtype="" if kv_dtype is KvDtypeChoice.auto else kv_dtype.value,
            engine=engine_name.value,
            engine_date=engine_date,
            num_requests=num_requests,
            prefix_hit_rate=prefix_hit_rate,
            disaggregated=disaggregated,
            prefill_pool=parse_prefill_pool(prefill_pool) if prefill_pool else None,
            harness="api" if api else "",
            moe_backend="" if moe_backend is MoeBackendChoice.default else moe_backend.value,
            memory_fraction=memory_fraction,
            spec_tokens=spec_tokens,
            spec_accept=spec_accept,
            spec_method=spec_method.value,
        ),
    )
    chosen = chip_option(chip, chip_file)
    target = chosen.chip
    catalog, _ = run_catalog(prices)
    offers = (*catalog.offers_for(target.id), *chosen.offers)
    efficiency = None
    if calibrated:
        efficiency = calibrated_efficiency(target.id, db)
        if efficiency is None:
            raise MeasurementError(
                f"no calibration for {target.id} in {resolve_db(db)}; run 'chipwise bench' on "
                f"a {target.id}, then 'chipwise calibrate --chip {target.id}' (or drop "
                "--calibrated)"
            )
    # the plan lays out the chips a prefill pool of its own leaves (the decode pool)
    plan_chips = decode_chips(work.phase, chips) if isinstance(work.phase, Inference) else chips
    exact, keys = _plan_from(plan, plan_chips, phase)
    planning = exact is None and not isinstance(model, Primitive)
    with spinner(
        planning and show_progress(quiet=quiet, as_json=as_json),
        f"planning {work.name} on {chips} x {target.id}",
    ):
        pred = predict(
            work, target, chips, precision.value, exact, plan_keys=keys, efficiency=efficiency
        )
    source = "given" if exact is not None else ("planner" if keys is None else "planner+given")
    data = prediction_to_dict(pred, plan_source=source, chip=target)
    data["efficiency"] = "calibrated" if calibrated else "packaged"
    data["price"] = price_of(pred, offers)
    if as_json:
        print_json(data)
    else:
        console.print(_table(pred, data))


def price_of(pred: Prediction, offers: tuple[PriceOffer, ...]) -> dict[str, Any] | None:
    """The cheapest on-demand offer (else the cheapest of any pricing) applied to ``pred``:
    ``{"offer", "usd_per_step" | "usd_per_million_output_tokens"}``; None without a price."""
    from chipwise.cost import cheapest_offer, price_of_prediction
    from chipwise.perf import PrimitivePrediction
    from chipwise.report.chips import offer_to_dict

    offer = cheapest_offer(offers)
    if offer is None or isinstance(pred, PrimitivePrediction):
        return None
    return {"offer": offer_to_dict(offer), **price_of_prediction(pred, offer)}


def serving_phase(
    *,
    batch: int,
    input_len: int,
    output_len: int,
    concurrency: int | None = None,
    rps: float | None = None,
    max_throughput: bool = False,
    server: bool = False,
    **engine: Any,
) -> Inference:
    """The ``Inference`` phase of the load options (at most one of --concurrency, --rps,
    --max-throughput; none = a static --batch)."""
    from chipwise.workload.ir import Inference

    options = (
        ("--concurrency", concurrency),
        ("--rps", rps),
        ("--max-throughput", max_throughput or None),
        ("--server", server or None),
    )
    given = [name for name, value in options if value is not None]
    if len(given) > 1:
        raise WorkloadError(
            f"{' and '.join(given)}: give one load (--batch, --concurrency, --rps, --server or "
            "--max-throughput)"
        )
    load = "batch"
    if concurrency is not None:
        load = "concurrency"
    elif rps is not None:
        load = "rps"
    elif max_throughput:
        load = "max_throughput"
    elif server:
        load = "server"
    return Inference(
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        load=load,
        concurrency=concurrency or 0,
        rps=rps or 0.0,
        **engine,
    )


def _plan_from(
    text: str | None, chips: int, phase: PhaseChoice
) -> tuple[Plan | None, dict[str, int | str] | None]:
    """(an exact plan, or the keys the planner must keep)."""
    from chipwise.perf import Plan, plan_constraints

    if text is None or not text.replace(",", "").strip():
        return None, None  # --plan "" (an empty shell variable): the planner decides
    fixed = plan_constraints(text, chips)
    if phase is PhaseChoice.infer or ("microbatch" in fixed and "recompute" in fixed):
        values: dict[str, Any] = {k: v for k, v in fixed.items()}
        return Plan(**values), None
    return None, fixed


def _breakdown(b: Breakdown) -> dict[str, float]:
    return {
        "compute_s": b.compute_s,
        "memory_s": b.memory_s,
        "communication_s": b.communication_s,
        "bubble_s": b.bubble_s,
        "overhead_s": b.overhead_s,
        "total_s": b.total_s,
    }


def _memory(m: MemoryUse) -> dict[str, float]:
    return {
        "weights_bytes": m.weights_bytes,
        "grads_bytes": m.grads_bytes,
        "optimizer_bytes": m.optimizer_bytes,
        "activations_bytes": m.activations_bytes,
        "kv_cache_bytes": m.kv_cache_bytes,
        "other_bytes": m.other_bytes,
        "total_bytes": m.total_bytes,
    }


def prediction_to_dict(
    pred: Prediction, *, plan_source: str = "given", chip: Chip | None = None
) -> dict[str, Any]:
    """The ``--json`` object of one prediction (documented in the module docstring).

    ``chip`` is the chip predicted on; needed for a hypothetical one (default: the catalog's).
    """
    from chipwise.hardware import default_catalog
    from chipwise.perf import Breakdown, InferPrediction, PrimitivePrediction, TrainPrediction

    out: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "workload": pred.workload,
        "chip": pred.chip_id,
        "chips": pred.chips,
    }
    if chip is not None and chip.user_supplied:
        out["chip_provenance"] = chip.provenance
    assumptions = [{"name": a.name, "value": a.value, "source": a.source} for a in pred.assumptions]
    if isinstance(pred, PrimitivePrediction):
        out.update(
            kind="primitive",
            precision=None,
            time_s=pred.time_s,
            flops=pred.flops,
            n_bytes=pred.n_bytes,
            bus_bytes=pred.bus_bytes,
            achieved_tflops=pred.achieved_tflops,
            achieved_bytes_per_s=pred.achieved_bytes_per_s,
            bus_bytes_per_s=pred.bus_bytes_per_s,
            bound=pred.bound,
            assumptions=assumptions,
        )
        return out
    reason = next((a.value for a in pred.assumptions if a.name == "plan"), None)
    common = {
        "precision": pred.precision,
        "memory_per_chip_bytes": pred.memory.total_bytes,
        "capacity_per_chip_bytes": pred.capacity_bytes,
        "memory": _memory(pred.memory),
        "fits": pred.fits,
        "plan": str(pred.plan),
        "plan_source": plan_source,
        "plan_reason": reason,
    }
    if isinstance(pred, TrainPrediction):
        on = chip if chip is not None else default_catalog().chip(pred.chip_id)
        peak = on.peak_flops_per_s(pred.precision)
        out.update(
            kind="train",
            seq_len=pred.seq_len,
            global_batch=pred.global_batch,
            step_time_s=pred.step_time_s,
            tokens_per_s=pred.tokens_per_s,
            tokens_per_s_per_chip=pred.tokens_per_s_per_chip,
            model_flops_per_token=pred.model_flops_per_token,
            mfu=pred.achieved_flops_per_s_per_chip / peak,
            **common,
            breakdown=_breakdown(pred.breakdown),
            assumptions=assumptions,
        )
        return out
    assert isinstance(pred, InferPrediction)
    n = pred.output_len
    per_request = Breakdown(
        compute_s=pred.prefill.compute_s + n * pred.decode.compute_s,
        memory_s=pred.prefill.memory_s + n * pred.decode.memory_s,
        communication_s=pred.prefill.communication_s + n * pred.decode.communication_s,
        bubble_s=pred.prefill.bubble_s + n * pred.decode.bubble_s,
        overhead_s=pred.prefill.overhead_s + n * pred.decode.overhead_s,
    )
    eng = pred.engine
    serving: dict[str, Any] = {}
    if eng is not None:
        serving = {
            "load": eng.load,
            "requests_per_s": eng.requests_per_s,
            "ttft_p50_s": _finite(eng.ttft_p50_s),
            "ttft_p99_s": _finite(eng.ttft_p99_s),
            "tpot_p50_s": eng.tpot_p50_s,
            "tpot_p99_s": eng.tpot_p99_s,
            "decode_batch_per_replica": eng.decode_batch_per_replica,
            "max_seqs_per_replica": eng.max_seqs_per_replica,
            "kv_capacity_tokens_per_replica": eng.kv_capacity_tokens_per_replica,
            "batch_limit": eng.limit,
            "prefill_chips": eng.prefill_chips,
            "saturated": eng.saturated,
        }
    else:
        serving = {"load": "batch", "ttft_p99_s": pred.ttft_s, "tpot_p99_s": pred.tpot_s}
    out.update(
        kind="infer",
        **serving,
        output_tokens_per_s_per_chip=pred.output_tokens_per_s_per_chip,
        batch=pred.batch,
        input_len=pred.input_len,
        output_len=pred.output_len,
        ttft_s=pred.ttft_s,
        tpot_s=pred.tpot_s,
        request_time_s=pred.request_time_s,
        tokens_per_s=pred.tokens_per_s,
        output_tokens_per_s=pred.output_tokens_per_s,
        **common,
        breakdown=_breakdown(per_request),
        prefill_breakdown=_breakdown(pred.prefill),
        decode_breakdown=_breakdown(pred.decode),
        assumptions=assumptions,
    )
    return out


def _finite(x: float) -> float | None:
    """JSON has no infinity: an unbounded latency (a saturated replica) is null."""
    return x if x != float("inf") else None


def _table(pred: Prediction, data: dict[str, Any]) -> Table:
    from chipwise.perf import Breakdown, InferPrediction, PrimitivePrediction, TrainPrediction

    title = f"{pred.workload} on {pred.chips} x {pred.chip_id}"
    if data.get("chip_provenance"):
        title += f" ({data['chip_provenance']})"
    table = Table(title=title, show_header=False, min_width=min(len(title) + 4, 80))
    table.add_column("what", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str]] = []
    if isinstance(pred, PrimitivePrediction):
        rows += [("time", format_seconds(pred.time_s)), ("bound", pred.bound)]
        if pred.flops:
            rows.append(("achieved", format_rate(pred.flops / pred.time_s)))
        if pred.bus_bytes:
            rows.append(("bus bandwidth", format_rate(pred.bus_bytes_per_s, "B/s")))
        elif pred.n_bytes and not pred.flops:
            rows.append(("bandwidth", format_rate(pred.achieved_bytes_per_s, "B/s")))
    else:
        if isinstance(pred, TrainPrediction):
            b = pred.breakdown
            rows += [
                ("step time", format_seconds(pred.step_time_s)),
                ("tokens/s", format_count(pred.tokens_per_s)),
                ("tokens/s per chip", format_count(pred.tokens_per_s_per_chip)),
                ("MFU", f"{data['mfu']:.1%} ({pred.precision} peak)"),
            ]
        else:
            b = Breakdown(**{k: v for k, v in data["breakdown"].items() if k != "total_s"})
            rows += _serving_rows(pred)
        fits = (
            "fits only inside the allocator's fragmentation allowance"
            if pred.tight
            else "fits"
            if pred.fits
            else "DOES NOT FIT"
        )
        rows += [
            (
                "memory per chip",
                f"{format_bytes(pred.memory.total_bytes)} of "
                f"{format_bytes(pred.capacity_bytes)} ({fits})",
            ),
            ("plan", f"{_spaced(str(pred.plan))} ({data['plan_source']})"),
            (
                "time split" + (" (one request)" if isinstance(pred, InferPrediction) else ""),
                f"compute {_sec(b.compute_s)}, memory {_sec(b.memory_s)}, "
                f"comm {_sec(b.communication_s)}, bubble {_sec(b.bubble_s)}, "
                f"overhead {_sec(b.overhead_s)}",
            ),
        ]
        if data.get("plan_reason"):
            rows.append(("why this plan", _spaced(str(data["plan_reason"]))))
    price = data.get("price")
    if price:
        o = price["offer"]
        cost = (
            f"${price['usd_per_step']:,.4g} per step"
            if "usd_per_step" in price
            else f"${price['usd_per_million_output_tokens']:,.4g} per M output tokens (full batch)"
        )
        flags = ", ".join(f for f in ("stale" if o["stale"] else "", o["confidence"] + " confidence"
                                      if o["confidence"] == "low" else "") if f)  # fmt: skip
        rows.append(
            (
                "price",
                f"{cost} at ${o['usd_per_chip_hour']:.2f}/chip-h ({o['provider']} {o['pricing']}"
                f"{', ' + flags if flags else ''}; {o['source']}, {o['date']})",
            )
        )
    for what, value in rows:
        table.add_row(what, value)
    return table


def _spaced(text: str) -> str:
    """``dp=4,fsdp=2,...`` -> ``dp=4, fsdp=2, ...`` so a narrow terminal wraps between axes."""
    return text.replace(",", ", ").replace(",  ", ", ")


def _sec(seconds: float) -> str:
    """``format_seconds``, but a zero is ``0`` (not ``0 µs``)."""
    return "0" if seconds == 0 else format_seconds(seconds)


def _serving_rows(pred: InferPrediction) -> list[tuple[str, str]]:
    eng = pred.engine
    if eng is None:
        return [
            ("time to first token", format_seconds(pred.ttft_s)),
            ("time per output token", format_seconds(pred.tpot_s)),
            ("output tokens/s", format_count(pred.output_tokens_per_s)),
        ]

    def sec(x: float) -> str:
        return "unbounded (saturated)" if x == float("inf") else format_seconds(x)

    return [
        (
            "load",
            eng.load.replace("_", " ")
            + (" - SATURATED: arrivals exceed capacity" if eng.saturated else ""),
        ),
        (
            "TTFT mean / p50 / p99",
            f"{sec(pred.ttft_s)} / {sec(eng.ttft_p50_s)} / {sec(eng.ttft_p99_s)}",
        ),
        (
            "TPOT mean / p50 / p99",
            f"{sec(pred.tpot_s)} / {sec(eng.tpot_p50_s)} / {sec(eng.tpot_p99_s)}",
        ),
        ("output tokens/s", format_count(pred.output_tokens_per_s)),
        ("output tokens/s per chip", format_count(pred.output_tokens_per_s_per_chip)),
        ("requests/s", f"{eng.requests_per_s:.3g}"),
        (
            "running batch per replica",
            f"{eng.decode_batch_per_replica:.0f} (limit {eng.max_seqs_per_replica}: "
            f"{eng.limit.replace('_', ' ')})",
        ),
    ]
