"""One row per point: every predicted figure, the plan, the price and the energy.

``evaluate(task)`` is the unit of work a process pool or a Ray cluster runs: the points of
one workload x chip x precision x phase x settings, one per chip count. It is a pure
function of its (picklable) task, so every runner gives the same rows bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from chipwise.cost import (
    ServingLoad,
    TrainingRun,
    cheapest,
    costs_of_run,
    energy_of_run,
    energy_of_serving,
    serving_costs,
)
from chipwise.errors import ChipwiseError, DoesNotFitError, UnsupportedOpError
from chipwise.explore.grid import Point, Settings
from chipwise.hardware import Catalog, UserChip
from chipwise.perf import InferPrediction, TrainPrediction, predict
from chipwise.units import SECONDS_PER_DAY
from chipwise.workload import Inference, Model, Training, Workload, load_workload_model

Value = str | int | float | bool | None
Row = dict[str, Value]
ColumnType = Literal["str", "int", "float", "bool"]

# Every column of the table, in order, with its type (None where it does not apply). Times
# are seconds, bytes are bytes, money is USD; ``usd`` is the whole training run (``tokens``
# of the grid) or one day of serving (``requests_per_day``).
COLUMNS: tuple[tuple[str, ColumnType], ...] = (
    ("workload", "str"),
    ("phase", "str"),
    ("chip", "str"),
    ("chip_provenance", "str"),  # "" for a catalog chip, else "user-supplied: ..."
    ("chip_base", "str"),  # the catalog chip a derived chip started from (else the chip)
    ("chips", "int"),
    ("precision", "str"),
    ("seq_len", "int"),
    ("global_batch", "int"),
    ("batch", "int"),
    ("input_len", "int"),
    ("output_len", "int"),
    ("load", "str"),  # infer: batch | concurrency=N | rps=R | max_throughput
    ("status", "str"),  # ok | does-not-fit | unsupported | error
    ("reason", "str"),
    ("plan", "str"),
    ("fits", "bool"),
    ("memory_per_chip_bytes", "float"),
    ("capacity_per_chip_bytes", "float"),
    ("step_time_s", "float"),
    ("tokens_per_s", "float"),
    ("tokens_per_s_per_chip", "float"),
    ("mfu", "float"),
    ("run_days", "float"),
    ("ttft_s", "float"),
    ("tpot_s", "float"),
    ("ttft_p99_s", "float"),  # the engine's 99th percentile (the mean under a static batch)
    ("tpot_p99_s", "float"),
    ("request_time_s", "float"),
    ("output_tokens_per_s", "float"),
    ("output_tokens_per_s_per_chip", "float"),
    ("requests_per_s", "float"),
    ("replicas", "int"),
    ("meets_slo", "bool"),
    ("compute_s", "float"),  # breakdown: one training step, or one request
    ("memory_s", "float"),
    ("communication_s", "float"),
    ("bubble_s", "float"),
    ("overhead_s", "float"),
    ("usd", "float"),
    ("usd_per_million_tokens", "float"),
    ("usd_per_chip_hour", "float"),
    ("price_provider", "str"),
    ("price_pricing", "str"),
    ("price_region", "str"),
    ("price_source", "str"),
    ("price_date", "str"),
    ("price_note", "str"),
    ("kwh", "float"),
    ("chip_peak_flops_per_s", "float"),  # at the point's precision
    ("chip_hbm_bytes_per_s", "float"),
    ("chip_hbm_capacity_bytes", "float"),
    ("chip_scale_up_bytes_per_s", "float"),
    ("chip_tdp_w", "float"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _ in COLUMNS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """The points of one workload x chip x precision x phase x settings (one per count)."""

    points: tuple[Point, ...]
    chip: UserChip
    workload_source: str  # the zoo id, or the config path resolved against the grid
    settings: Settings


@lru_cache(maxsize=64)  # each entry a whole model; a grid names one
def _model(source: str) -> Model:
    return load_workload_model(source)


def _blank(point: Point, chip: UserChip) -> Row:
    c = chip.chip
    row: Row = dict.fromkeys(COLUMN_NAMES)
    row.update(
        workload=point.workload,
        phase=point.phase,
        chip=c.id,
        chip_provenance=c.provenance,
        chip_base=c.based_on or c.id,
        chips=point.chips,
        precision=point.precision,
        seq_len=point.seq_len,
        global_batch=point.global_batch,
        batch=point.batch,
        input_len=point.input_len,
        output_len=point.output_len,
        load=point.load,
        chip_peak_flops_per_s=c.dense_flops_per_s.get(point.precision),
        chip_hbm_bytes_per_s=c.hbm_bytes_per_s,
        chip_hbm_capacity_bytes=c.hbm_capacity_bytes,
        chip_scale_up_bytes_per_s=c.scale_up.bytes_per_s_per_chip,
        chip_tdp_w=c.tdp_w,
        reason="",
    )
    return row


def _workload(point: Point, source: str) -> Workload:
    model = _model(source)
    if point.phase == "train":
        assert point.seq_len is not None and point.global_batch is not None
        return Workload(
            model=model, phase=Training(seq_len=point.seq_len, global_batch=point.global_batch)
        )
    assert point.input_len is not None and point.output_len is not None
    kind, _, value = (point.load or "batch").partition("=")
    phase = Inference(
        batch=point.batch or 1,
        input_len=point.input_len,
        output_len=point.output_len,
        load=kind,
        concurrency=int(value) if kind == "concurrency" else 0,
        rps=float(value) if kind == "rps" else 0.0,
    )
    return Workload(model=model, phase=phase)


def _price(row: Row, offer_note: str, **offer: Value) -> None:
    row.update(offer)
    row["price_note"] = offer_note


def _train_row(row: Row, pred: TrainPrediction, task: Task, prices: Catalog) -> None:
    s, chip = task.settings, task.chip.chip
    run = TrainingRun(tokens=s.tokens)
    b = pred.breakdown
    row.update(
        step_time_s=pred.step_time_s,
        tokens_per_s=pred.tokens_per_s,
        tokens_per_s_per_chip=pred.tokens_per_s_per_chip,
        mfu=pred.achieved_flops_per_s_per_chip / chip.peak_flops_per_s(pred.precision),
        run_days=run.steps(pred) * pred.step_time_s / SECONDS_PER_DAY,
        compute_s=b.compute_s,
        memory_s=b.memory_s,
        communication_s=b.communication_s,
        bubble_s=b.bubble_s,
        overhead_s=b.overhead_s,
        kwh=energy_of_run(pred, chip, run).facility_kwh,
    )
    pricing = None if s.pricing == "any" else (s.pricing,)
    best = cheapest(costs_of_run(pred, prices, run, cloud=s.cloud, pricing=pricing))
    if best is not None:
        o = best.offer
        row.update(usd=best.usd_total, usd_per_million_tokens=best.usd_per_million_tokens)
        _price(row, o.note, usd_per_chip_hour=o.usd_per_chip_hour, price_provider=o.provider,
               price_pricing=o.pricing, price_region=o.region, price_source=o.source,
               price_date=o.date)  # fmt: skip


def _infer_row(row: Row, pred: InferPrediction, task: Task, prices: Catalog) -> None:
    s, chip = task.settings, task.chip.chip
    load = ServingLoad(requests_per_day=s.requests_per_day)
    n = pred.output_len
    meets = None
    if s.ttft_slo_s is not None or s.tpot_slo_s is not None:
        meets = (s.ttft_slo_s is None or pred.ttft_p99_s <= s.ttft_slo_s) and (
            s.tpot_slo_s is None or pred.tpot_p99_s <= s.tpot_slo_s
        )
    p, d = pred.prefill, pred.decode
    row.update(
        ttft_s=pred.ttft_s,
        tpot_s=pred.tpot_s,
        ttft_p99_s=pred.ttft_p99_s,
        tpot_p99_s=pred.tpot_p99_s,
        request_time_s=pred.request_time_s,
        tokens_per_s=pred.tokens_per_s,
        output_tokens_per_s=pred.output_tokens_per_s,
        output_tokens_per_s_per_chip=pred.output_tokens_per_s_per_chip,
        requests_per_s=(
            pred.engine.requests_per_s
            if pred.engine is not None
            else pred.batch / pred.request_time_s
        ),
        meets_slo=meets,
        compute_s=p.compute_s + n * d.compute_s,
        memory_s=p.memory_s + n * d.memory_s,
        communication_s=p.communication_s + n * d.communication_s,
        bubble_s=p.bubble_s + n * d.bubble_s,
        overhead_s=p.overhead_s + n * d.overhead_s,
        kwh=energy_of_serving(pred, chip, load).facility_kwh,
    )
    pricing = None if s.pricing == "any" else (s.pricing,)
    best = cheapest(serving_costs(pred, prices, load, cloud=s.cloud, pricing=pricing))
    if best is not None:
        o = best.offer
        row.update(
            usd=best.usd_per_day,
            usd_per_million_tokens=best.usd_per_million_tokens,
            replicas=best.replicas,
        )
        _price(row, o.note, usd_per_chip_hour=o.usd_per_chip_hour, price_provider=o.provider,
               price_pricing=o.pricing, price_region=o.region, price_source=o.source,
               price_date=o.date)  # fmt: skip


def evaluate(task: Task) -> list[tuple[int, Row]]:
    """``(point index, row)`` for every point of ``task``; a point that cannot run is a row
    with ``status`` and ``reason``, never an exception (a bug still raises)."""
    chip = task.chip
    prices = Catalog(
        chips=(chip.chip,),
        offers=chip.offers,
        purchases=() if chip.purchase is None else (chip.purchase,),
    )
    out: list[tuple[int, Row]] = []
    for point in task.points:
        row = _blank(point, chip)
        try:
            pred = predict(_workload(point, task.workload_source), chip.chip, point.chips,
                           point.precision)  # fmt: skip
            if not isinstance(pred, TrainPrediction | InferPrediction):
                raise ChipwiseError(f"{point.workload}: not a model or training/serving job")
            row.update(
                status="ok",
                plan=str(pred.plan),
                fits=pred.fits,
                memory_per_chip_bytes=pred.memory.total_bytes,
                capacity_per_chip_bytes=pred.capacity_bytes,
            )
            if isinstance(pred, TrainPrediction):
                _train_row(row, pred, task, prices)
            else:
                _infer_row(row, pred, task, prices)
        except DoesNotFitError as err:
            row.update(status="does-not-fit", reason=str(err), fits=False)
        except UnsupportedOpError as err:
            row.update(status="unsupported", reason=str(err))
        except ChipwiseError as err:
            row.update(status="error", reason=str(err))
        out.append((point.index, row))
    return out


def evaluate_all(tasks: Sequence[Task]) -> list[tuple[int, Row]]:
    """Every task in this process (the serial runner, and a Ray task's batch)."""
    return [r for t in tasks for r in evaluate(t)]
