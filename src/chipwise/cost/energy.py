"""Power, energy, carbon and performance per watt of a predicted run.

Power model, per chip (a straight line between idle and TDP)::

    P(u) = idle + u x (TDP - idle),   idle = idle_fraction(kind) x TDP

``u`` is the share of the step the chip is busy, read from the prediction (``activity``):
- a breakdown: u = (compute_s + memory_s) / total_s. Exposed communication, pipeline bubble
  and host overhead count as idle. A memory-bound step still drives HBM and SMs/MXUs, so it
  counts as busy: MFU alone would badly under-count power (an H100 reaches its 700 W peak at
  ~70% MFU, Epoch AI; see ``mfu_at_full_power``).
- a training prediction without a breakdown: u = min(1, MFU / mfu_at_full_power).
- an inference prediction without breakdowns: u = 1 (TDP, an upper bound), said so in ``basis``.
- serving at part load: u is scaled by the share of provisioned capacity in use.

Energy: chip energy x host_power_factor (CPUs, NICs, fans of the server) = IT energy;
x PUE = facility energy. Carbon = facility kWh x grid intensity. Perf per watt is given at
chip level (what the article's "TPUs are power-efficient" claim is about) and at facility level.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from chipwise.cost.assumptions import Assumptions, CostError, default_assumptions
from chipwise.cost.pricing import (
    ServingLoad,
    TrainingRun,
    replicas_for,
    requests_per_s_per_replica,
)
from chipwise.hardware.chip import Chip
from chipwise.perf import Assumption, Breakdown, InferPrediction, TrainPrediction, compute_dtype
from chipwise.units import KILO, SECONDS_PER_DAY, SECONDS_PER_HOUR

Basis = Literal["breakdown", "mfu", "tdp-upper-bound", "given"]
Facility = Literal["cloud", "owned"]
_J_PER_KWH = KILO * SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True, kw_only=True)
class Activity:
    """How busy a chip is during a step (0..1) and what that number was read from."""

    utilisation: float
    basis: Basis

    def __post_init__(self) -> None:
        if not 0 <= self.utilisation <= 1:
            raise CostError(f"utilisation must be in [0, 1], got {self.utilisation!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChipPower:
    """Modelled power of one chip running the prediction."""

    chip_id: str
    tdp_w: float
    idle_w: float
    utilisation: float
    basis: Basis
    power_w: float
    typical_w: float | None  # a measured mean, where the catalog has one (TPU v3/v4)
    assumptions: tuple[Assumption, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnergy:
    """Energy and carbon of a training run, or of one day of serving."""

    chip_id: str
    chips: int
    seconds: float
    tokens: float
    power: ChipPower
    host_power_factor: float
    pue: float
    chip_kwh: float  # accelerators only
    it_kwh: float  # x host_power_factor: the servers
    facility_kwh: float  # x PUE: what the grid delivers
    kg_co2e: float
    usd_electricity: float  # facility_kwh x usd_per_kwh (inside a cloud price; shown for scale)
    assumptions: tuple[Assumption, ...]

    @property
    def tokens_per_facility_kwh(self) -> float:
        return self.tokens / self.facility_kwh if self.facility_kwh > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PerfPerWatt:
    """Work per unit of power, achieved (from the prediction) and on the spec sheet."""

    chip_id: str
    precision: str
    power_w: float  # modelled, per chip
    tokens_per_joule: float  # chip level
    facility_tokens_per_joule: float  # with host power and PUE
    achieved_flops_per_s_per_w: float | None  # training only (model FLOPs)
    peak_flops_per_s_per_w: float | None  # dense peak at precision / TDP; None if unsupported
    assumptions: tuple[Assumption, ...]


def _check_chip(pred: TrainPrediction | InferPrediction, chip: Chip) -> None:
    if pred.chip_id != chip.id:
        raise CostError(
            f"prediction is for {pred.chip_id!r} but chip {chip.id!r} was given; "
            f"pass catalog.chip({pred.chip_id!r})"
        )


def _busy_share(b: Breakdown) -> float | None:
    total = b.total_s
    if total <= 0:
        return None
    return min(1.0, max(0.0, (b.compute_s + b.memory_s) / total))


def activity(
    pred: TrainPrediction | InferPrediction,
    chip: Chip,
    assumptions: Assumptions | None = None,
) -> Activity:
    """The busy share of a step, from the breakdown (see the module docstring)."""
    _check_chip(pred, chip)
    a = default_assumptions() if assumptions is None else assumptions
    if isinstance(pred, TrainPrediction):
        share = _busy_share(pred.breakdown)
        if share is not None:
            return Activity(utilisation=share, basis="breakdown")
        mfu = pred.achieved_flops_per_s_per_chip / chip.peak_flops_per_s(pred.precision)
        return Activity(utilisation=min(1.0, mfu / a.mfu_at_full_power), basis="mfu")
    # Serving: weight prefill and decode by the time each takes in one request.
    parts = [
        (pred.ttft_s, _busy_share(pred.prefill)),
        (pred.tpot_s * pred.output_len, _busy_share(pred.decode)),
    ]
    known = [(t, s) for t, s in parts if s is not None and t > 0]
    time_s = sum(t for t, _ in known)
    if not known or time_s <= 0:
        return Activity(utilisation=1.0, basis="tdp-upper-bound")
    return Activity(utilisation=sum(t * s for t, s in known) / time_s, basis="breakdown")


def power_w(tdp_w: float, idle_fraction: float, utilisation: float) -> float:
    """``idle + u x (TDP - idle)`` with ``idle = idle_fraction x TDP``."""
    if not 0 <= utilisation <= 1:
        raise CostError(f"utilisation must be in [0, 1], got {utilisation!r}")
    idle_w = idle_fraction * tdp_w
    return idle_w + utilisation * (tdp_w - idle_w)


def chip_power(
    pred: TrainPrediction | InferPrediction,
    chip: Chip,
    assumptions: Assumptions | None = None,
    *,
    utilisation: float | None = None,
) -> ChipPower:
    """Modelled power of one chip; ``utilisation`` overrides what the prediction implies."""
    a = default_assumptions() if assumptions is None else assumptions
    _check_chip(pred, chip)
    act = (
        activity(pred, chip, a)
        if utilisation is None
        else Activity(utilisation=utilisation, basis="given")
    )
    return chip_power_at(chip, act, a)


def chip_power_at(chip: Chip, act: Activity, assumptions: Assumptions | None = None) -> ChipPower:
    """Modelled power of one chip at a given activity (no prediction needed)."""
    a = default_assumptions() if assumptions is None else assumptions
    idle_name, idle_fraction = a.idle_fraction(chip.kind)
    names = [idle_name] + (["mfu_at_full_power"] if act.basis == "mfu" else [])
    return ChipPower(
        chip_id=chip.id,
        tdp_w=chip.tdp_w,
        idle_w=idle_fraction * chip.tdp_w,
        utilisation=act.utilisation,
        basis=act.basis,
        power_w=power_w(chip.tdp_w, idle_fraction, act.utilisation),
        typical_w=chip.typical_w,
        assumptions=a.cited(*names),
    )


def _energy(
    *,
    chip: Chip,
    chips: int,
    seconds: float,
    tokens: float,
    power: ChipPower,
    a: Assumptions,
    facility: Facility,
) -> RunEnergy:
    host_name, host_factor = a.host_power_factor(chip.kind)
    pue_name = "pue_cloud" if facility == "cloud" else "pue_owned"
    pue = float(getattr(a, pue_name))
    chip_kwh = power.power_w * chips * seconds / _J_PER_KWH
    it_kwh = chip_kwh * host_factor
    facility_kwh = it_kwh * pue
    cited = a.cited(host_name, pue_name, "grid_kg_co2e_per_kwh", "usd_per_kwh")
    return RunEnergy(
        chip_id=chip.id,
        chips=chips,
        seconds=seconds,
        tokens=tokens,
        power=power,
        host_power_factor=host_factor,
        pue=pue,
        chip_kwh=chip_kwh,
        it_kwh=it_kwh,
        facility_kwh=facility_kwh,
        kg_co2e=facility_kwh * a.grid_kg_co2e_per_kwh,
        usd_electricity=facility_kwh * a.usd_per_kwh,
        assumptions=power.assumptions + cited,
    )


def energy_of_run(
    pred: TrainPrediction,
    chip: Chip,
    run: TrainingRun,
    assumptions: Assumptions | None = None,
    *,
    facility: Facility = "cloud",
    utilisation: float | None = None,
) -> RunEnergy:
    """kWh and kg CO2e of a whole training run (``facility`` picks the PUE)."""
    a = default_assumptions() if assumptions is None else assumptions
    power = chip_power(pred, chip, a, utilisation=utilisation)
    steps = run.steps(pred)
    return _energy(
        chip=chip,
        chips=pred.chips,
        seconds=steps * pred.step_time_s,
        tokens=steps * pred.tokens_per_step,
        power=power,
        a=a,
        facility=facility,
    )


def energy_of_serving(
    pred: InferPrediction,
    chip: Chip,
    load: ServingLoad,
    assumptions: Assumptions | None = None,
    *,
    facility: Facility = "cloud",
) -> RunEnergy:
    """kWh and kg CO2e of one day of serving ``load`` (all replicas powered all day).

    Part load lowers utilisation: u = activity x requests / capacity.
    """
    a = default_assumptions() if assumptions is None else assumptions
    act = activity(pred, chip, a)
    replicas = replicas_for(pred, load)
    requests_per_day = load.requests_per_day_for(pred)
    capacity = replicas * requests_per_s_per_replica(pred) * SECONDS_PER_DAY
    load_fraction = min(1.0, requests_per_day / capacity)
    given = chip_power(pred, chip, a, utilisation=act.utilisation * load_fraction)
    power = dataclasses.replace(given, basis=act.basis)
    return _energy(
        chip=chip,
        chips=replicas * pred.chips,
        seconds=SECONDS_PER_DAY,
        tokens=requests_per_day * (pred.input_len + pred.output_len),
        power=power,
        a=a,
        facility=facility,
    )


def perf_per_watt(
    pred: TrainPrediction | InferPrediction,
    chip: Chip,
    assumptions: Assumptions | None = None,
    *,
    facility: Facility = "cloud",
) -> PerfPerWatt:
    """Tokens per joule and FLOP/s per watt, achieved and peak, for one prediction."""
    a = default_assumptions() if assumptions is None else assumptions
    power = chip_power(pred, chip, a)
    total_w = power.power_w * pred.chips
    host_name, host_factor = a.host_power_factor(chip.kind)
    pue_name = "pue_cloud" if facility == "cloud" else "pue_owned"
    pue = float(getattr(a, pue_name))
    tokens_per_joule = pred.tokens_per_s / total_w
    achieved = (
        pred.achieved_flops_per_s_per_chip / power.power_w
        if isinstance(pred, TrainPrediction)
        else None
    )
    peak = (
        chip.peak_flops_per_s(compute_dtype(pred.precision)) / chip.tdp_w
        if chip.supports(compute_dtype(pred.precision))
        else None
    )
    return PerfPerWatt(
        chip_id=chip.id,
        precision=pred.precision,
        power_w=power.power_w,
        tokens_per_joule=tokens_per_joule,
        facility_tokens_per_joule=tokens_per_joule / (host_factor * pue),
        achieved_flops_per_s_per_w=achieved,
        peak_flops_per_s_per_w=peak,
        assumptions=power.assumptions + a.cited(host_name, pue_name),
    )
