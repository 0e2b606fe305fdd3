"""Pydantic models of the web API's requests and responses (the OpenAPI schema's source).

``AdviseBody`` mirrors the options of ``chipwise advise``, with the same defaults, so the same
request gives the same answer in the browser and in the terminal.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from chipwise.advise.defaults import DEFAULT_WORKLOAD
from chipwise.advise.request import (
    DEFAULT_MAX_CHIPS,
    Cloud,
    Framework,
    KvDtype,
    Objective,
    Pricing,
)
from chipwise.limits import (
    MAX_CHIPS,
    MAX_DAYS,
    MAX_JSON_DEPTH,
    MAX_LATENCY_MS,
    MAX_RPS,
    MAX_USD,
    json_all_finite,
    json_too_deep,
)

# The largest config.json an upload may be: real Hugging Face configs are a few KiB (those
# with big label maps reach tens of KiB); 256 KiB leaves room and bounds the work.
UPLOAD_LIMIT_BYTES = 256 * 1024
# Any request body: an advise body may carry an uploaded config plus the form's fields.
BODY_LIMIT_BYTES = 1024 * 1024
# A chip filter longer than this is not a filter (the catalog has a few dozen chips).
MAX_CHIP_FILTER = 64


class _Edge(BaseModel):
    # NaN and Infinity (which Python's JSON reader accepts) are refused in every float field.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


# A chip id or alias is a few characters ("h100-sxm", "TPU v5p").
_ChipName = Annotated[str, StringConstraints(max_length=64)]
# A quantity such as "15T" or "2.5e12".
_Quantity = float | Annotated[str, StringConstraints(max_length=64)]


class AdviseBody(_Edge):
    """What to advise on: the options of ``chipwise advise``, with its defaults."""

    workload: str = Field(
        DEFAULT_WORKLOAD,
        min_length=1,
        max_length=200,
        description="A zoo id or alias (GET /api/workloads) or a non-ML kind. Paths, "
        "module:factory and primitives are not accepted here: upload a config.json instead.",
    )
    config: dict[str, Any] | None = Field(
        None,
        description="An uploaded config.json (as returned by POST /api/workloads/upload); "
        "when given, it is the workload and 'workload' is ignored.",
    )
    config_name: str = Field(
        "uploaded",
        min_length=1,
        max_length=100,
        description="The name the uploaded model goes by in the answer.",
    )
    phase: Literal["train", "infer"] = Field(
        "train", description="train (a training run) or infer (serving)."
    )
    tokens: _Quantity | None = Field(
        None,
        description="Training tokens, e.g. '15T' or 2e9. Default: 1B for the default "
        "fine-tune (llama3-8b), else 20 tokens per parameter (Chinchilla).",
    )
    requests_per_day: _Quantity | None = Field(
        None, description="Serving load, e.g. '1M'. Default 100k."
    )
    load: Literal["batch", "rps"] | None = Field(
        None,
        description="Infer: 'batch' sizes static batches of 'batch' requests for "
        "requests_per_day; 'rps' runs the continuous-batching engine at 'rps' Poisson "
        "arrivals per second (else requests_per_day spread evenly) within the p99 targets. "
        "null: 'rps' when rps, ttft_ms or tpot_ms is given, else 'batch' (as the CLI).",
    )
    rps: float | None = Field(
        None, gt=0, le=MAX_RPS, description="Infer: requests per second (--rps)."
    )
    ttft_ms: float | None = Field(
        None,
        gt=0,
        le=MAX_LATENCY_MS,
        description="Infer: p99 time-to-first-token target in ms (--ttft).",
    )
    tpot_ms: float | None = Field(
        None,
        gt=0,
        le=MAX_LATENCY_MS,
        description="Infer: p99 time-per-output-token target in ms (--tpot).",
    )
    kv_dtype: KvDtype = Field(
        "auto",
        description="Infer, load 'rps': the engine's KV-cache dtype (--kv-dtype); auto: from "
        "the precision.",
    )
    cloud: Cloud = Field("any", description="Which cloud's prices (--cloud).")
    pricing: Pricing = Field(
        "on-demand",
        description="Which cloud prices rank the options (--pricing); 'any' = the cheapest.",
    )
    own_hardware: bool = Field(
        False, description="Buy instead of rent: GPUs by TCO, TPUs excluded (--own-hardware)."
    )
    budget_usd: float | None = Field(
        None,
        gt=0,
        le=MAX_USD,
        description="Spend limit in USD: the run (train) or one day (infer).",
    )
    deadline_days: float | None = Field(
        None, gt=0, le=MAX_DAYS, description="Train: longest acceptable run, in days."
    )
    objective: Objective = Field("cost", description="Rank by cost, time or energy.")
    framework: Framework | None = Field(
        None, description="The code's framework; chips without it are excluded."
    )
    precision: str = Field(
        "bf16",
        max_length=16,
        description="Matmul precision: bf16, fp8, int8, fp16, fp32, fp4 (NVFP4/MXFP4), int4 "
        "or w8a16 (weight-only).",
    )
    seq_len: int = Field(4096, ge=1, le=1 << 21, description="Train: tokens per sequence.")
    global_batch: int | None = Field(
        None,
        ge=1,
        le=1 << 24,
        description="Train: sequences per optimizer step; default: the DeepSeek LLM law for "
        "the run's compute (B = 0.292 x C^0.3271 tokens).",
    )
    method: Literal["full", "lora", "qlora"] | None = Field(
        None,
        description="Train: full, lora or qlora; null = lora for the default fine-tune, "
        "else full (as 'chipwise advise --method').",
    )
    lora_rank: int = Field(16, ge=1, le=4096, description="Train, lora/qlora: adapter rank.")
    project: str | None = Field(
        None,
        max_length=4096,
        description="A project folder on the server's machine to scan (read, never run), as "
        "'chipwise advise --project'; only on a loopback-only server.",
    )
    porting: Literal["auto", "allow", "as-is"] = Field(
        "auto",
        description="With a project: auto (as-is wins unless the port pays), allow "
        "(--allow-porting) or as-is (--as-is).",
    )
    prices: str | None = Field(
        None,
        max_length=200_000,
        description="Your own prices: the text of a TOML or CSV file in the offers schema (as "
        "'chipwise advise --prices'); they replace the catalog's for this request and the "
        "answer names them.",
    )
    prices_name: str = Field(
        "prices.toml",
        pattern=r"^[A-Za-z0-9_.-]{1,80}\.(toml|csv)$",
        description="The price file's name; .toml or .csv picks the format.",
    )
    batch: int = Field(64, ge=1, le=1 << 20, description="Infer: concurrent requests.")
    input_len: int = Field(1024, ge=1, le=1 << 21, description="Infer: prompt tokens.")
    output_len: int = Field(
        256, ge=0, le=1 << 21, description="Infer: generated tokens per request."
    )
    chips: list[_ChipName] = Field(
        default_factory=list,
        max_length=MAX_CHIP_FILTER,
        description="Only these chips (ids or aliases); empty: the whole catalog.",
    )
    max_chips: int | None = Field(
        None,
        ge=1,
        le=MAX_CHIPS,
        description="Largest chip count to consider; default: the largest job the catalog "
        f"records for each chip ({DEFAULT_MAX_CHIPS} for a chip with none).",
    )

    @field_validator("config")
    @classmethod
    def _config_is_plain_json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """An uploaded config nests a few levels and holds finite numbers only."""
        if value is not None and json_too_deep(value):
            raise ValueError(f"the config nests more than {MAX_JSON_DEPTH} levels")
        if value is not None and not json_all_finite(value):
            raise ValueError("the config holds NaN or Infinity; numbers must be finite")
        return value

    @model_validator(mode="after")
    def _one_serving_load(self) -> AdviseBody:
        """Serving options that contradict the phase, the load or each other are errors,
        never silently ignored (as the CLI refuses them)."""
        slo = [
            name
            for name, value in (("rps", self.rps), ("ttft_ms", self.ttft_ms),
                                ("tpot_ms", self.tpot_ms))
            if value is not None
        ]  # fmt: skip
        engine = slo + (["kv_dtype"] if self.kv_dtype != "auto" else [])
        if self.phase == "train" and (engine or self.load is not None):
            given = ", ".join(engine or ["load"])
            raise ValueError(f"{given}: serving options; use phase 'infer' or drop them")
        if self.load == "batch" and engine:
            raise ValueError(
                f"{', '.join(engine)} need load 'rps' (the continuous-batching engine); "
                "load 'batch' sizes static batches"
            )
        if self.kv_dtype != "auto" and not slo and self.load != "rps":
            raise ValueError("kv_dtype needs load 'rps' (or rps, ttft_ms or tpot_ms)")
        if self.rps is not None and self.requests_per_day not in (None, ""):
            raise ValueError("rps and requests_per_day both give the load; give one")
        return self

    @property
    def engine_load(self) -> bool:
        """Whether serving runs the continuous-batching engine (load 'rps')."""
        if self.load is not None:
            return self.load == "rps"
        return any(v is not None for v in (self.rps, self.ttft_ms, self.tpot_ms))


class ChartOut(_Edge):
    id: str = Field(description="Stable id: roofline-<chip>, time-cost, pareto, memory.")
    title: str
    caption: str = ""
    figure: dict[str, Any] = Field(description="A plotly figure: {data: [...], layout: {...}}.")


class AdviseResponse(_Edge):
    recommendation: dict[str, Any] = Field(
        description="Exactly what 'chipwise advise --json' prints (schema_version 1)."
    )
    charts: list[ChartOut]
    text: str = Field(description="The terminal rendering at 100 columns, without colour.")


class ChipOut(_Edge):
    id: str
    name: str
    vendor: str
    kind: str
    aliases: list[str]
    hbm_bytes: float
    hbm_bytes_per_s: float
    bf16_flops_per_s: float | None
    clouds: list[str]
    purchasable: bool


class ChipsResponse(_Edge):
    chips: list[ChipOut]


class ModelOut(_Edge):
    id: str
    title: str
    aliases: list[str]
    moe: bool
    params_total: float
    params_active: float


class KindOut(_Edge):
    id: str
    title: str


class WorkloadsResponse(_Edge):
    default: str
    models: list[ModelOut]
    non_ml: list[KindOut]


class UploadResponse(_Edge):
    name: str = Field(description="Send back as 'config_name' in POST /api/advise.")
    config: dict[str, Any] = Field(description="Send back as 'config' in POST /api/advise.")
    params_total: float
    params_active: float
    n_layers: int
    d_model: int
    moe: bool


class ErrorResponse(_Edge):
    error: str = Field(description="One line: what is wrong and how to fix it.")
    detail: list[dict[str, Any]] | None = None
