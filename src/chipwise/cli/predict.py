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
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from chipwise.bench.calibrate import calibrated_efficiency
from chipwise.bench.store import resolve_db
from chipwise.cli.app import app
from chipwise.cli.output import console, print_json, quiet_option, show_progress, spinner
from chipwise.errors import MeasurementError
from chipwise.hardware import Chip, chip_option, default_catalog
from chipwise.limits import MAX_CHIPS, MAX_GLOBAL_BATCH, MAX_SEQ_LEN, MAX_SERVE_BATCH
from chipwise.perf import (
    Breakdown,
    InferPrediction,
    MemoryUse,
    Plan,
    Prediction,
    PrimitivePrediction,
    TrainPrediction,
    plan_constraints,
    predict,
)
from chipwise.units import format_bytes, format_count, format_rate, format_seconds
from chipwise.workload.ir import Inference, Primitive, Training, Workload
from chipwise.workload.load import load_workload_model

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


@app.command("predict")
def predict_command(
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
        PrecisionChoice.bf16, "--precision", help="Matmul precision."
    ),
    seq_len: int = typer.Option(
        Training().seq_len, "--seq-len", min=1, max=MAX_SEQ_LEN, help="Train: tokens per sequence."
    ),
    global_batch: int = typer.Option(
        Training().global_batch,
        "--global-batch",
        min=1,
        max=MAX_GLOBAL_BATCH,
        help="Train: sequences per step.",
    ),
    batch: int = typer.Option(
        Inference().batch,
        "--batch",
        min=1,
        max=MAX_SERVE_BATCH,
        help="Infer: concurrent requests (sequences).",
    ),
    input_len: int = typer.Option(
        Inference().input_len,
        "--input-len",
        min=1,
        max=MAX_SEQ_LEN,
        help="Infer: prompt tokens per request.",
    ),
    output_len: int = typer.Option(
        Inference().output_len,
        "--output-len",
        min=0,
        max=MAX_SEQ_LEN,
        help="Infer: generated tokens per request.",
    ),
    plan: str | None = typer.Option(
        None,
        "--plan",
        help="A parallel plan, e.g. 'tp=8, pp=2, microbatch=1, recompute=selective' (keys: dp "
        "fsdp tp pp cp ep vp microbatch recompute). Unnamed axes are 1 and dp takes the chips "
        "left; without microbatch/recompute the planner picks them. Default: the planner "
        "chooses everything.",
    ),
    calibrated: bool = typer.Option(
        False, "--calibrated", help="Use the chip's calibration from the measurement store."
    ),
    db: Path | None = typer.Option(
        None,
        "--db",
        help="Measurement store for --calibrated. Default: $CHIPWISE_DB, else the user data dir.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object (schema_version 1, see the module doc)."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Predict step time, throughput and memory of WORKLOAD on --chips x --chip."""
    with spinner(show_progress(quiet=quiet, as_json=as_json), f"reading {workload}"):
        model = load_workload_model(workload)
    if isinstance(model, Primitive) and model.kind == "matmul" and workload.count(":") < 2:
        model = replace(model, dtype=precision.value)  # no dtype in the string: --precision
    work = Workload(
        model=model,
        phase=Training(seq_len=seq_len, global_batch=global_batch)
        if phase is PhaseChoice.train
        else Inference(batch=batch, input_len=input_len, output_len=output_len),
    )
    target = chip_option(chip, chip_file).chip
    efficiency = None
    if calibrated:
        efficiency = calibrated_efficiency(target.id, db)
        if efficiency is None:
            raise MeasurementError(
                f"no calibration for {target.id} in {resolve_db(db)}; run 'chipwise bench' on "
                f"a {target.id}, then 'chipwise calibrate --chip {target.id}' (or drop "
                "--calibrated)"
            )
    exact, keys = _plan_from(plan, chips, phase)
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
    if as_json:
        print_json(data)
    else:
        console.print(_table(pred, data))


def _plan_from(
    text: str | None, chips: int, phase: PhaseChoice
) -> tuple[Plan | None, dict[str, int | str] | None]:
    """(an exact plan, or the keys the planner must keep)."""
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
    out.update(
        kind="infer",
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


def _table(pred: Prediction, data: dict[str, Any]) -> Table:
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
            rows += [
                ("time to first token", format_seconds(pred.ttft_s)),
                ("time per output token", format_seconds(pred.tpot_s)),
                ("output tokens/s", format_count(pred.output_tokens_per_s)),
            ]
        fits = "fits" if pred.fits else "DOES NOT FIT"
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
    for what, value in rows:
        table.add_row(what, value)
    return table


def _spaced(text: str) -> str:
    """``dp=4,fsdp=2,...`` -> ``dp=4, fsdp=2, ...`` so a narrow terminal wraps between axes."""
    return text.replace(",", ", ").replace(",  ", ", ")


def _sec(seconds: float) -> str:
    """``format_seconds``, but a zero is ``0`` (not ``0 µs``)."""
    return "0" if seconds == 0 else format_seconds(seconds)
