"""Time and cost for non-ML work (fp64 HPC, stencils, FFTs, graphics) from catalog rates.

A non-ML kind is timed by its bottleneck (the first measurable need it lists): fp64 FLOP/s
for dense linear algebra, memory bandwidth for stencils, fp32 vector FLOP/s for shading.
Time = work / (peak rate x sustained fraction):

* fp64: ``HPL_FRACTION``, Rmax / Rpeak of the GPU systems at the top of the Top500;
* memory bandwidth: the chip's ``hbm_fraction`` (perf's STREAM-copy efficiency);
* fp32 shading: no sourced sustained fraction, so the peak rate: the time is a lower bound
  and the answer says so.

The default job (``REFERENCE_WORK``) is a round amount of work in the bottleneck's unit;
``AdviseRequest.work`` (``--work``) replaces it. Kinds without a rate in the catalog
(hashing: int32 throughput; video encoding: encoder sessions) get no time, only capability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chipwise.advise.request import AdviseRequest
from chipwise.cost import NotPurchasable, offers_in, owned_cost
from chipwise.hardware import Catalog, Chip
from chipwise.perf import efficiency_for
from chipwise.units import SECONDS_PER_HOUR
from chipwise.workload.ir import NonMLKind

# Top500, November 2024 list: El Capitan (MI300A) Rmax 1,742.00 / Rpeak 2,746.38 PFLOP/s =
# 0.63; Frontier (MI250X) 1,353.00 / 2,055.72 = 0.66 (top500.org/lists/top500/2024/11/).
HPL_FRACTION = 0.65
HPL_SOURCE = "Top500 Nov 2024: Rmax/Rpeak of El Capitan 0.63, Frontier 0.66"

# capability -> (amount, unit, what the default job is)
REFERENCE_WORK: dict[str, tuple[float, str, str]] = {
    "fp64": (1e18, "fp64 FLOPs", "1 exaFLOP of dense fp64 linear algebra (an HPL-like solve)"),
    "memory-bandwidth": (1e17, "bytes", "100 PB streamed through device memory"),
    "fp32": (1e18, "fp32 FLOPs", "1 exaFLOP of fp32 shader and compute work"),
}
_BOTTLENECKS = ("fp64", "memory-bandwidth")


@dataclass(frozen=True, slots=True, kw_only=True)
class NonMLOption:
    """One chip doing the non-ML job: its rate, time and (cheapest) cost."""

    chip: Chip
    rate_per_s: float  # sustained, in the work's unit per second
    hours: float
    usd: float | None  # None: no price for this chip under the request
    usd_per_chip_hour: float | None
    price_label: str
    lower_bound: bool  # timed at the peak rate (no sourced sustained fraction)


def bottleneck(kind: NonMLKind) -> str | None:
    """The capability that sets the time: the first rate-bearing need it lists, else the
    fp32 shader rate for work that runs on general-purpose cores (graphics); None when the
    catalog has no rate for it (hashing, video encoding)."""
    first = next((r.capability for r in kind.requirements if r.capability in _BOTTLENECKS), None)
    if first is not None:
        return first
    needs = {r.capability for r in kind.requirements}
    return "fp32" if "raster" in needs else None


def _rate(chip: Chip, what: str) -> tuple[float, bool]:
    """(sustained rate, timed at peak?) of ``chip`` for the bottleneck ``what``."""
    if what == "fp64":
        return chip.peak_flops_per_s("fp64") * HPL_FRACTION, False
    if what == "memory-bandwidth":
        return chip.hbm_bytes_per_s * efficiency_for(chip).hbm_fraction, False
    return chip.vector_flops_per_s or 0.0, True


def _price(chip: Chip, request: AdviseRequest, catalog: Catalog) -> tuple[float | None, str]:
    if request.own_hardware:
        owned = owned_cost(chip, catalog, assumptions=request.assumptions)
        if isinstance(owned, NotPurchasable):
            return None, "not for sale"
        return owned.usd_per_chip_hour_owned, "owned, TCO"
    pricing = None if request.pricing == "any" else (request.pricing,)
    offers = offers_in(catalog, chip.id, cloud=request.cloud, pricing=pricing)
    if not offers:
        return None, "no price"
    best = min(offers, key=lambda o: o.usd_per_chip_hour)
    return best.usd_per_chip_hour, f"{best.provider} {best.pricing}"


def work_of(kind: NonMLKind, request: AdviseRequest) -> tuple[float, str, str] | None:
    """(amount, unit, description) of the job: ``--work`` or the reference job."""
    what = bottleneck(kind)
    if what is None:
        return None
    amount, unit, text = REFERENCE_WORK[what]
    if request.work is not None:
        return request.work, unit, f"{request.work:.3g} {unit} (--work)"
    return amount, unit, f"{text}; --work to size it"


def non_ml_options(
    kind: NonMLKind, chips: tuple[Chip, ...], request: AdviseRequest, catalog: Catalog
) -> tuple[NonMLOption, ...]:
    """Each capable chip's time and cost for the job, ranked by the objective (cost when
    priced, else time)."""
    what = bottleneck(kind)
    work = work_of(kind, request)
    if what is None or work is None:
        return ()
    out: list[NonMLOption] = []
    for chip in chips:
        rate, peak = _rate(chip, what)
        if not rate > 0:
            continue
        hours = work[0] / rate / SECONDS_PER_HOUR
        per_hour, label = _price(chip, request, catalog)
        out.append(
            NonMLOption(
                chip=chip,
                rate_per_s=rate,
                hours=hours,
                usd=None if per_hour is None else per_hour * hours,
                usd_per_chip_hour=per_hour,
                price_label=label,
                lower_bound=peak,
            )
        )

    def key(o: NonMLOption) -> tuple[float, float]:
        usd = o.usd if o.usd is not None else math.inf
        return (o.hours, usd) if request.objective == "time" else (usd, o.hours)

    return tuple(sorted(out, key=key))
