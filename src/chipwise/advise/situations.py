"""The article's "when to use which" table as explicit, tested rules.

| Situation (the article's words)                                  | Better choice |
| Training massive models at Google-scale                          | TPU           |
| Local development, mixed workloads, wide framework support       | GPU           |
| You need CUDA-specific libraries                                 | GPU           |
| You're already deep in the Google Cloud / TensorFlow / JAX world | TPU           |
| You want hardware you can actually own                           | GPU           |

Each rule fires only when its situation applies, and cites the number or scan finding behind
it. Where the numbers contradict the usual rule, the reason says so in plain words, with the
two numbers it rests on (``agrees_with_article=False``), instead of repeating the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from chipwise.advise.display import format_energy, format_run_time, format_usd
from chipwise.advise.option import Option, objective_key
from chipwise.advise.request import AdviseRequest, Finding, Platform, platform_of
from chipwise.hardware import Catalog, Chip, PriceOffer
from chipwise.perf import InferPrediction, TrainPrediction
from chipwise.units import GB, format_seconds
from chipwise.workload.accounting import params_total
from chipwise.workload.ir import Inference, NonMLKind, Training, TransformerSpec

Favours = Literal["gpu", "tpu"]

# "Massive" per the article: we call a training job massive from 50B parameters or 1T tokens,
# the scale of the public runs that used pods (PaLM 540B, Llama-3 405B: 15.6T tokens).
MASSIVE_PARAMS = 50e9
MASSIVE_TOKENS = 1e12
# A card goes in a workstation when it is sold on its own as a PCIe add-in card and draws at
# most what one 12V-2x6 (12VHPWR) power connector delivers: 600 W (PCIe CEM 5.1 / Intel ATX
# 3.1), the most any single add-in card is specified for. SXM/OAM modules need a server
# baseboard whatever their power.
WORKSTATION_MAX_TDP_W = 600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakEven:
    """The price at which the losing side of a GPU-vs-TPU cost comparison would tie.

    ``chip_id`` is the best option of the losing kind (``side``); at ``usd_per_chip_hour`` on
    the same provider and pricing its run (or serving day) costs what the winner's does, the
    winner's price and the loser's count held fixed (the best count of a chip does not depend
    on its price: every count's cost scales with it). ``rests_on`` names each price of the
    comparison that is low-confidence or stale.
    """

    side: Favours
    chip_id: str
    provider: str
    pricing: str
    usd_per_chip_hour: float
    today_usd_per_chip_hour: float
    rests_on: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        today = f"today ${self.today_usd_per_chip_hour:.2f}, {self.provider} {self.pricing}"
        if self.side == "tpu":
            out = (
                f"The best TPU ({self.chip_id}) wins below ${self.usd_per_chip_hour:.2f}/chip-h "
                f"({today})."
            )
        else:
            out = (
                f"The GPU stays behind unless {self.chip_id} costs below "
                f"${self.usd_per_chip_hour:.2f}/chip-h ({today})."
            )
        if self.rests_on:
            out += f" This rests on {'; '.join(self.rests_on)}."
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    """Why the recommendation leans one way, with the evidence for it."""

    rule: str
    situation: str  # the article's wording
    favours: Favours
    text: str
    evidence: tuple[str, ...] = ()
    agrees_with_article: bool | None = None  # None: the rule is about fit, not numbers
    break_even: BreakEven | None = None  # set when the comparison is on cost


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What the rules look at."""

    request: AdviseRequest
    best_gpu: Option | None
    best_tpu: Option | None
    pick: Option | None
    single_chip_gpu: Option | None  # the best allowed 1-chip option on a purchasable GPU
    considered: tuple[Option, ...] = ()  # every allowed chip x count the search planned
    catalog: Catalog | None = None  # for facts about chips outside the options


def is_workstation_card(chip: Chip) -> bool:
    """A GPU you can put in a desktop workstation: sold, PCIe, within one 12V-2x6 connector."""
    return (
        chip.kind == "gpu"
        and chip.purchasable
        and chip.scale_up.topology == "pcie"
        and chip.tdp_w <= WORKSTATION_MAX_TDP_W
    )


def describe(o: Option) -> str:
    """A short line with the numbers of an option."""
    parts = [f"{o.chip.id} ×{o.total_chips}"]
    if o.disaggregated:
        decode = o.replicas - o.prefill_replicas
        parts[0] += (
            f" (disaggregated: {o.prefill_replicas} prefill + {decode} decode replicas of "
            f"{o.chips})"
        )
    elif o.replicas > 1:
        parts[0] += f" ({o.replicas} replicas of {o.chips})"
    if o.days is not None:
        parts.append(format_run_time(o.days))
    if isinstance(o.prediction, TrainPrediction):
        parts.append(f"{o.prediction.tokens_per_s_per_chip:,.0f} tok/s/chip")
    else:
        parts.append(f"{format_seconds(o.prediction.request_time_s)} per request")
    if o.usd is not None:
        parts.append(format_usd(o.usd) + ("/day" if o.days is None else ""))
    if o.kwh is not None:
        parts.append(format_energy(o.kwh) + ("/day" if o.days is None else ""))
    return ", ".join(parts)


def _compare(ctx: Context) -> tuple[Favours, str] | None:
    """Which of best GPU / best TPU wins on the objective, and by how much."""
    g, t = ctx.best_gpu, ctx.best_tpu
    if g is None or t is None:
        return None
    key = objective_key(ctx.request)
    kg, kt = key(g)[0], key(t)[0]
    if kg == kt:
        return None
    winner: Favours = "tpu" if kt < kg else "gpu"
    ratio = max(kg, kt) / min(kg, kt)
    metric = {"time": "faster", "cost": "cheaper", "energy": "less energy"}[ctx.request.objective]
    return winner, f"{ratio:.2f}× {metric}"


def _offer(o: Option) -> PriceOffer | None:
    offer = getattr(o.cost, "offer", None)
    return offer if isinstance(offer, PriceOffer) else None


def _caveat(o: Option, offer: PriceOffer) -> str | None:
    """'the tpu-v5p price (gcp on-demand $4.20/chip-h, stale: 701 days old)', or None."""
    caveats = offer.caveats()
    if not caveats:
        return None
    return (
        f"the {o.chip.id} price ({offer.provider} {offer.pricing} "
        f"${offer.usd_per_chip_hour:.2f}/chip-h, {', '.join(caveats)}; {offer.source})"
    )


def break_even(ctx: Context) -> BreakEven | None:
    """Where the cost comparison of best GPU and best TPU would flip; None when the objective
    is not cost or either side has no cloud price."""
    g, t = ctx.best_gpu, ctx.best_tpu
    if ctx.request.objective != "cost" or g is None or t is None:
        return None
    og, ot = _offer(g), _offer(t)
    if og is None or ot is None or not g.usd or not t.usd:
        return None
    # usd = chip-hours x price, so the loser ties at price x winner's usd / loser's usd.
    loser, offer, win_usd, lose_usd = (
        (t, ot, g.usd, t.usd) if g.usd <= t.usd else (g, og, t.usd, g.usd)
    )
    rests_on = tuple(c for o, off in ((g, og), (t, ot)) if (c := _caveat(o, off)) is not None)
    return BreakEven(
        side="tpu" if loser.chip.kind == "tpu" else "gpu",
        chip_id=loser.chip.id,
        provider=offer.provider,
        pricing=offer.pricing,
        usd_per_chip_hour=offer.usd_per_chip_hour * win_usd / lose_usd,
        today_usd_per_chip_hour=offer.usd_per_chip_hour,
        rests_on=rests_on,
    )


def _rate(o: Option) -> tuple[float, float] | None:
    """(tokens/s per chip, USD per chip-hour) of a priced training option."""
    p = o.prediction
    if not isinstance(p, TrainPrediction) or o.usd is None or not o.days:
        return None
    return p.tokens_per_s_per_chip, o.usd / (o.days * 24 * o.total_chips)


def _because(gpu: Option | None, tpu: Option | None) -> str:
    """', because X does A tok/s per chip at $B/chip-hour and Y ...': the two numbers a
    cost comparison rests on ('' when either is not a priced training option)."""
    if gpu is None or tpu is None:
        return ""
    g, t = _rate(gpu), _rate(tpu)
    if g is None or t is None:
        return ""
    return (
        f" ({gpu.chip.id}: {g[0]:,.0f} tok/s per chip at ${g[1]:.2f}/chip-hour; "
        f"{tpu.chip.id}: {t[0]:,.0f} at ${t[1]:.2f})"
    )


def massive_training(ctx: Context) -> Reason | None:
    wl = ctx.request.workload
    if not isinstance(wl.phase, Training) or not isinstance(wl.model, TransformerSpec):
        return None
    params = params_total(wl.model)
    tokens = ctx.request.tokens or 0.0
    if params < MASSIVE_PARAMS and tokens < MASSIVE_TOKENS:
        return None
    situation = "Training massive models at Google-scale → TPU"
    scale = f"{params / 1e9:,.0f}B parameters, {tokens / 1e12:,.3g}T tokens"
    cmp = _compare(ctx)
    if cmp is None:
        only = ctx.best_tpu or ctx.best_gpu
        if only is None:
            return None
        kind = "TPU" if only.chip.kind == "tpu" else "GPU"
        return Reason(
            rule="massive-training",
            situation=situation,
            favours="tpu" if only.chip.kind == "tpu" else "gpu",
            text=(
                f"Training at scale ({scale}); only {kind} options are allowed here, so GPUs "
                "and TPUs cannot be compared."
            ),
            evidence=(f"best {kind}: {describe(only)}",),
        )
    winner, by = cmp
    assert ctx.best_gpu is not None and ctx.best_tpu is not None
    evidence = (f"best TPU: {describe(ctx.best_tpu)}", f"best GPU: {describe(ctx.best_gpu)}")
    because = _because(ctx.best_gpu, ctx.best_tpu)
    if winner == "tpu":
        text = (
            f"TPUs usually win at this scale ({scale}), and here they do: the best TPU "
            f"option is {by} than the best GPU option{because}."
        )
    else:
        text = (
            f"TPUs are usually the better choice at this scale ({scale}); here they are "
            f"not: the best GPU option is {by} than the best TPU option{because}."
        )
    flip = break_even(ctx)
    return Reason(
        rule="massive-training",
        situation=situation,
        favours=winner,
        text=text if flip is None else f"{text} {flip.text}",
        evidence=evidence,
        agrees_with_article=winner == "tpu",
        break_even=flip,
    )


def _where_to_get(chip: Chip) -> str:
    """How one gets this GPU, from catalog facts (form factor, power, availability)."""
    if is_workstation_card(chip):
        return "a card you can put in a workstation"
    ways = []
    if chip.purchasable:
        ways.append("a server GPU you can buy")
    if chip.clouds:
        listed = ", ".join(chip.clouds[:3]) + (", ..." if len(chip.clouds) > 3 else "")
        ways.append(f"rent on {len(chip.clouds)} clouds ({listed})")
    return " or ".join(ways) or "a GPU"


def local_development(ctx: Context) -> Reason | None:
    req = ctx.request
    one = ctx.single_chip_gpu
    if one is not None and isinstance(req.workload.phase, Inference) and one.replicas > 1:
        one = None  # one card holds the model, but the load needs a fleet: not local dev
    pytorch = req.framework == "pytorch" or (
        req.project is not None and "pytorch" in req.project.frameworks
    )
    if one is None and not pytorch:
        return None
    situation = "Local development, mixed workloads, wide framework support → GPU"
    evidence: list[str] = []
    if one is not None:
        mem = one.prediction.memory.total_bytes / GB
        cap = one.chip.hbm_capacity_bytes / GB
        where = _where_to_get(one.chip)
        evidence.append(
            f"fits on one {one.chip.id} ({mem:,.1f} of {cap:,.0f} GB), {where}: {describe(one)}"
        )
    if pytorch:
        evidence.append(
            "PyTorch runs natively on CUDA and ROCm; on a TPU it needs torch_xla or torchax, "
            "which work but are less mature"
        )
    text = (
        "One GPU runs the whole job: develop and run it on the same kind of chip."
        if one is not None
        else "The code is PyTorch-first: a GPU runs it as written."
    )
    return Reason(
        rule="local-development",
        situation=situation,
        favours="gpu",
        text=text,
        evidence=tuple(evidence),
    )


def _serving_line(o: Option) -> str:
    """An option's serving figures: p99 latencies, tokens/s per chip, $ per 1M output tokens."""
    p = o.prediction
    assert isinstance(p, InferPrediction)
    per_m = getattr(o.cost, "usd_per_million_output_tokens", None)
    money = f", ${per_m:,.2f} per 1M output tokens" if per_m is not None else ""
    return (
        f"{describe(o)}: TTFT p99 {format_seconds(p.ttft_p99_s)}, TPOT p99 "
        f"{format_seconds(p.tpot_p99_s)}, {p.output_tokens_per_s_per_chip:,.0f} output tok/s "
        f"per chip{money}"
    )


def production_serving(ctx: Context) -> Reason | None:
    """Serving a load that needs more than one chip: a production fleet, compared on the
    objective within the latency targets (not a development box)."""
    req = ctx.request
    if not isinstance(req.workload.phase, Inference):
        return None
    best = [o for o in (ctx.best_gpu, ctx.best_tpu) if o is not None]
    if not best or all(o.total_chips <= 1 for o in best):
        return None
    targets = [
        f"{name} p99 <= {format_seconds(v)}"
        for name, v in (("TTFT", req.ttft_p99_s), ("TPOT", req.tpot_p99_s))
        if v is not None
    ]
    within = f" within {' and '.join(targets)}" if targets else ""
    situation = "Serving in production: a fleet of replicas, not a development box"
    evidence = tuple(f"best {o.chip.kind.upper()}: {_serving_line(o)}" for o in best)
    cmp = _compare(ctx)
    if cmp is None:
        only = best[0]
        return Reason(
            rule="production-serving",
            situation=situation,
            favours="tpu" if only.chip.kind == "tpu" else "gpu",
            text=f"A serving fleet of {only.total_chips} chips{within}.",
            evidence=evidence,
        )
    winner, by = cmp
    return Reason(
        rule="production-serving",
        situation=situation,
        favours=winner,
        text=f"At {req.serving_rps:,.3g} requests/s{within}, the best {winner.upper()} fleet "
        f"is {by} than the best {'TPU' if winner == 'gpu' else 'GPU'} fleet.",
        evidence=evidence,
    )


def disaggregated_serving(ctx: Context) -> Reason | None:
    """The pick serves prompts and generation on separate pools: say what it saves against
    the best colocated deployment of the same chip, and what it pays (the KV transfer)."""
    pick, req = ctx.pick, ctx.request
    if pick is None or not pick.disaggregated or not isinstance(req.workload.phase, Inference):
        return None
    key = objective_key(req)
    colocated = min(
        (o for o in ctx.considered if o.chip.id == pick.chip.id and not o.disaggregated),
        key=key,
        default=None,
    )
    phase = req.workload.phase
    targets = " and ".join(
        f"{name} p99 <= {format_seconds(v)}"
        for name, v in (("TTFT", req.ttft_p99_s), ("TPOT", req.tpot_p99_s))
        if v is not None
    )
    link = (pick.chip.scale_out or pick.chip.scale_up).name
    evidence = [f"disaggregated: {_serving_line(pick)}"]
    if colocated is None:
        text = (
            f"No colocated deployment of {pick.chip.id} meets {targets or 'the load'}: decode "
            f"steps that also carry {phase.input_len}-token prompt chunks miss it."
        )
    else:
        evidence.append(f"colocated: {_serving_line(colocated)}")
        text = (
            f"With {phase.input_len}-token prompts, decode steps without prefill chunks meet "
            f"{targets or 'the load'} on {pick.total_chips} chips instead of "
            f"{colocated.total_chips} colocated."
        )
    evidence.append(
        f"each prompt's KV cache moves from a prefill to a decode replica over {link} "
        "(counted in TTFT)"
    )
    return Reason(
        rule="disaggregated-serving",
        situation="Long prompts under a tight TPOT: separate prefill and decode pools "
        "(NVIDIA Dynamo, AIConfigurator's xPyD)",
        favours="tpu" if pick.chip.kind == "tpu" else "gpu",
        text=text,
        evidence=tuple(evidence),
    )


def _ports(
    findings: tuple[Finding, ...], keys: tuple[str, ...], platform: Platform = "google-tpu"
) -> list[str]:
    """One line per CUDA-specific rule: its title, every file:line, the porting path."""
    by_key: dict[str, list[Finding]] = {}
    for f in findings:
        if f.platform == platform and f.verdict != "runs" and f.key in keys:
            by_key.setdefault(f.key, []).append(f)
    lines = []
    for key in keys:
        group = by_key.get(key)
        if not group:
            continue
        first = group[0]
        where = ", ".join(dict.fromkeys(f.where for f in group))
        effort = f" ({first.effort} effort)" if first.effort else ""
        on = "TPU" if platform == "google-tpu" else platform
        lines.append(f"{first.name} at {where} → on {on}: {first.porting or 'rewrite'}{effort}")
    return lines


def cuda_libraries(ctx: Context) -> Reason | None:
    proj = ctx.request.project
    if proj is None or not proj.cuda_specific:
        return None
    ports = _ports(proj.findings, proj.cuda_specific)
    # The pick may be a GPU that is not NVIDIA's (ROCm hipifies CUDA, Intel needs SYCL):
    # say what the port costs there too, so "GPU" is not read as "runs as is".
    pick_platform = platform_of(ctx.pick.chip) if ctx.pick is not None else None
    if pick_platform is not None and pick_platform not in ("nvidia-cuda", "google-tpu"):
        verdict_there = proj.verdicts.get(pick_platform, "")
        if verdict_there and verdict_there != "runs":
            assert ctx.pick is not None
            ports.append(
                f"the pick, {ctx.pick.chip.id}, runs it on {pick_platform} with changes "
                f"(scan: {verdict_there}); NVIDIA GPUs run it as is"
            )
            ports.extend(_ports(proj.findings, proj.cuda_specific, pick_platform))
    tpu = proj.verdicts.get("google-tpu", "")
    verdict = f" (scan verdict for TPU: {tpu})" if tpu else ""
    return Reason(
        rule="cuda-libraries",
        situation="You need CUDA-specific libraries → GPU",
        favours="gpu",
        text=(
            f"The project uses CUDA-specific code: {', '.join(proj.cuda_titles)}. "
            f"On a TPU each needs a port{verdict}."
        ),
        evidence=tuple(ports) or proj.cuda_titles,
    )


def _tensorflow_gaps(ctx: Context) -> list[str]:
    """TPUs in the catalog whose software list lacks TensorFlow."""
    if ctx.catalog is None:
        return []
    return [c.name for c in ctx.catalog.chips if c.kind == "tpu" and "tensorflow" not in c.software]


def google_ecosystem(ctx: Context) -> Reason | None:
    req = ctx.request
    frameworks = set(req.project.frameworks if req.project else ())
    if req.framework:
        frameworks.add(req.framework)
    google = sorted(frameworks & {"jax", "tensorflow"})
    if req.cloud != "gcp" and not google:
        return None
    why = []
    if req.cloud == "gcp":
        why.append("you run on Google Cloud")
    if google:
        why.append(f"the code uses {' and '.join(google)}")
    evidence: list[str] = []
    cmp = _compare(ctx)
    if ctx.best_tpu is not None:
        evidence.append(f"best TPU: {describe(ctx.best_tpu)}")
    if ctx.best_gpu is not None:
        evidence.append(f"best GPU: {describe(ctx.best_gpu)}")
    gaps = _tensorflow_gaps(ctx) if "tensorflow" in google else []
    if gaps:
        evidence.append(f"TensorFlow is not supported on {', '.join(gaps)} (catalog software)")
    agrees = None if cmp is None else cmp[0] == "tpu"
    lead = "; ".join(why)
    lead = lead[0].upper() + lead[1:]
    if cmp is None:
        text = f"{lead}: TPUs are native there."
        if ctx.best_tpu is None:
            text = f"{lead}, but no TPU option is allowed here."
    elif cmp[0] == "tpu":
        text = f"{lead}, and the best TPU option is {cmp[1]}."
    else:
        text = (
            f"{lead}, which usually points to TPUs; here it does not: the best GPU option "
            f"is {cmp[1]}{_because(ctx.best_gpu, ctx.best_tpu)}."
        )
    flip = break_even(ctx) if cmp is not None else None
    return Reason(
        rule="google-ecosystem",
        situation="Already deep in Google Cloud / TensorFlow / JAX → TPU",
        favours="tpu",
        text=text if flip is None else f"{text} {flip.text}",
        evidence=tuple(evidence),
        agrees_with_article=agrees,
        break_even=flip,
    )


def own_hardware(ctx: Context) -> Reason | None:
    if not ctx.request.own_hardware:
        return None
    evidence = ["TPUs are rented on Google Cloud only; they cannot be bought"]
    if ctx.best_gpu is not None:
        evidence.append(f"best owned GPU: {describe(ctx.best_gpu)} ({ctx.best_gpu.price_label})")
    return Reason(
        rule="own-hardware",
        situation="You want hardware you can actually own → GPU",
        favours="gpu",
        text="You asked for hardware you own: only GPUs (and other buyable accelerators) qualify.",
        evidence=tuple(evidence),
    )


RULES: tuple[Callable[[Context], Reason | None], ...] = (
    massive_training,
    local_development,
    production_serving,
    disaggregated_serving,
    cuda_libraries,
    google_ecosystem,
    own_hardware,
)


def reasons_for(ctx: Context) -> tuple[Reason, ...]:
    """Every rule that applies, in the article's order."""
    return tuple(r for rule in RULES if (r := rule(ctx)) is not None)


def non_ml_reason(model: NonMLKind) -> Reason:
    """A non-ML workload: the TPU cannot run it, and why (from its requirements)."""
    needs = "; ".join(f"{r.capability}: {r.why}" for r in model.requirements)
    return Reason(
        rule="not-tensor-math",
        situation="A TPU does tensor math only: no graphics, no general compute",
        favours="gpu",
        text=f"{model.title} cannot run on a TPU. It needs {needs}.",
        evidence=(model.description,) if model.description else (),
    )
