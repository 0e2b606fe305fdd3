"""Porting effort in the pick: a chip that runs the project as is beats one that needs changes,
unless the numbers say the port pays for itself.

A scanned project (``--project``) gives each platform a verdict (runs | runs-with-changes |
does-not-run) and, per finding, a port and its effort (small | medium | large, from
``compat``'s package knowledge). The advisor prices a port in engineer-days:

* effort -> days: chipwise's scale, not a measurement: small = 1 day (swap a package or a
  flag), medium = 5 days (a week: hipify a kernel and fix what the wave64 / intrinsics
  checks find), large = 20 days (a month: rewrite a kernel for another programming model).
  Each distinct finding is ported once.
* a day's cost: ``ENGINEER_USD_PER_YEAR`` / ``WORKING_DAYS_PER_YEAR`` (salary only; no
  overhead, so a port is if anything under-priced and the as-is chip is favoured less).

Modes (``AdviseRequest.porting``): ``auto`` (the default) keeps the fastest/cheapest pick
only if its saving over the best as-is option exceeds the port's cost (time objective: the
port's days are added to the run's wall clock; energy: a port never pays in kWh, so the
as-is chip is picked); ``allow`` (``--allow-porting``) ranks by the numbers alone and says
what the port costs; ``as-is`` (``--as-is``) excludes every chip that needs changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from chipwise.advise.display import format_run_time, format_usd
from chipwise.advise.option import Option, objective_key
from chipwise.advise.request import AdviseRequest, Finding, Platform, platform_of
from chipwise.advise.situations import Reason
from chipwise.hardware import Chip

EFFORT_DAYS = {"small": 1.0, "medium": 5.0, "large": 20.0}
UNKNOWN_EFFORT_DAYS = EFFORT_DAYS["medium"]
# US Bureau of Labor Statistics, Occupational Outlook Handbook, "Software Developers": median
# pay $132,270 per year (May 2023), bls.gov/ooh/computer-and-information-technology/
# software-developers.htm.
ENGINEER_USD_PER_YEAR = 132_270.0
WORKING_DAYS_PER_YEAR = 260.0  # 52 weeks x 5 days
ENGINEER_USD_PER_DAY = ENGINEER_USD_PER_YEAR / WORKING_DAYS_PER_YEAR
# A serving saving recurs daily; a port is weighed against one year of it (the horizon at
# which the chips themselves are a generation old, as ``request.MAX_PRACTICAL_DAYS``).
SERVING_HORIZON_DAYS = 365.0
MODES = ("auto", "allow", "as-is")


@dataclass(frozen=True, slots=True, kw_only=True)
class Port:
    """What it takes to run the project on one platform."""

    platform: Platform
    findings: tuple[Finding, ...]  # one per distinct rule
    days: float

    @property
    def usd(self) -> float:
        return self.days * ENGINEER_USD_PER_DAY

    @property
    def effort(self) -> str:
        """The largest effort of its findings (small < medium < large)."""
        order = list(EFFORT_DAYS)
        known = [f.effort for f in self.findings if f.effort in EFFORT_DAYS]
        return max(known, key=order.index) if known else "unknown"

    @property
    def summary(self) -> str:
        """'custom CUDA kernel → hipify; flash-attn → ROCm flash-attention' (short ports)."""
        parts = []
        for f in self.findings:
            how = _short(f.porting) if f.porting else "changes"
            parts.append(f"{f.name} → {how}")
        return "; ".join(parts)

    def cost_text(self) -> str:
        n = len(self.findings)
        what = f"{n} change{'s' if n != 1 else ''}"
        return (
            f"{what}, {self.effort} effort: ~{self.days:g} engineer-days ≈ {format_usd(self.usd)}"
        )


def _short(porting: str) -> str:
    """The first clause of a porting note: 'hipify (torch's ...); fix ...' -> 'hipify'."""
    cut = len(porting)
    for sep in (" (", ";", ". "):
        i = porting.find(sep)
        if 0 < i < cut:
            cut = i
    return porting[:cut].strip()


def port_for(chip: Chip, request: AdviseRequest) -> Port | None:
    """The port ``chip`` needs for the scanned project; None if it runs the project as is."""
    proj = request.project
    platform = platform_of(chip)
    if proj is None or platform is None or proj.verdicts.get(platform, "runs") == "runs":
        return None
    seen: dict[str, Finding] = {}
    for f in proj.findings:
        if f.platform == platform and f.verdict != "runs":
            seen.setdefault(f.key or f.name, f)
    findings = tuple(seen.values())
    days = sum(EFFORT_DAYS.get(f.effort, UNKNOWN_EFFORT_DAYS) for f in findings)
    return Port(platform=platform, findings=findings, days=days or UNKNOWN_EFFORT_DAYS)


def as_is_exclusion(chip: Chip, request: AdviseRequest) -> str:
    """Why ``--as-is`` drops this chip ('' if it runs the project as is)."""
    if request.porting != "as-is":
        return ""
    port = port_for(chip, request)
    if port is None:
        return ""
    return f"needs changes on {port.platform} ({port.summary}); --as-is keeps chips that run as is"


def _saving(pick: Option, other: Option, request: AdviseRequest, port: Port) -> tuple[str, bool]:
    """How much ``pick`` saves over ``other`` on the objective, and whether that pays for
    ``port``."""
    if request.objective == "time" and pick.days is not None and other.days is not None:
        saved = other.days - pick.days
        port_days = port.days * 7 / 5  # engineer-days -> calendar days
        text = f"finishes {format_run_time(saved)} sooner than"
        return text, saved > port_days
    if request.objective == "cost" and pick.usd is not None and other.usd is not None:
        saved = other.usd - pick.usd
        if pick.days is None:  # serving: a daily saving, weighed over the horizon
            return (
                f"saves {format_usd(saved)}/day over",
                saved * SERVING_HORIZON_DAYS > port.usd,
            )
        return f"saves {format_usd(saved)} over", saved > port.usd
    key = objective_key(request)
    ratio = key(other)[0] / key(pick)[0] if key(pick)[0] else 1.0
    return f"uses {ratio:.2f}× less {request.objective} than", False


def choose_pick(
    ranked: list[Option], request: AdviseRequest
) -> tuple[Option | None, Reason | None]:
    """The pick after weighing porting effort, and the reason to show (None: no port)."""
    if not ranked:
        return None, None
    top = ranked[0]
    port = port_for(top.chip, request)
    if port is None:
        return top, None
    as_is = next((o for o in ranked if port_for(o.chip, request) is None), None)
    head = f"{top.chip.id} needs changes on {port.platform}: {port.summary} ({port.cost_text()})"
    if as_is is None:
        return top, _reason(
            f"{head}. No allowed chip runs the project as is, so the pick needs the port.",
        )
    saving, pays = _saving(top, as_is, request, port)
    compare = f"{top.chip.id} {saving} {as_is.chip.id}, which runs the project as is"
    if request.porting == "allow":
        return top, _reason(
            f"{compare}, but {head}. Picked by the numbers alone (--allow-porting)."
        )
    if pays:
        return top, _reason(
            f"{compare}; that pays for the port: {head}. --as-is keeps only chips that run "
            "it as is."
        )
    return as_is, _reason(
        f"{compare}, but the port costs more than it saves: {head}. Picked "
        f"{as_is.chip.id}; --allow-porting picks by the numbers alone."
    )


def _reason(text: str) -> Reason:
    return Reason(
        rule="porting-effort",
        situation="Runs as is, or needs a port",
        favours="gpu",
        text=text,
    )
