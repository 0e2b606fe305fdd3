"""The web UI's FastAPI app: one page, a JSON API under ``/api``, no CDN.

Routes::

    GET  /                          the page (static/index.html), its script and style
    GET  /static/plotly.min.js      plotly.js from the installed plotly package
    GET  /api/chips                 the catalog, briefly
    GET  /api/workloads             the model zoo and the non-ML kinds
    POST /api/workloads/upload      a config.json (multipart, <= 256 KiB), read, never run
    POST /api/advise                AdviseBody -> recommendation JSON + charts + terminal text
    GET  /api/openapi.json          the OpenAPI schema
    GET  /api/docs                  the endpoints as plain HTML, generated from the schema
                                    (FastAPI's Swagger UI needs a CDN, so it is off)

Errors: a ``ChipwiseError`` is 400 ``{"error": "..."}`` (the CLI's one line); a malformed
body (NaN and Infinity included) is 422 with ``error`` and ``detail`` (pydantic's errors
without the values sent); a body over its limit is 413, counted on the bytes received;
a foreign Host header 421 (``guard.py``); a full advise pool or a request past its time limit
503 (``pool.py``); an unexpected exception a logged, one-line 500.

Nothing the user sends is executed or used as a server path: a workload is a zoo id or a
non-ML kind, or an uploaded config.json that the config reader parses as JSON.

No ``from __future__ import annotations`` here: FastAPI reads the endpoints' annotations at
run time, and ``Request``/``UploadFile`` are imported inside ``create_app`` (optional extra).
"""

import io
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chipwise._version import __version__
from chipwise.advise import AdviseError, AdviseRequest, Recommendation, recommend
from chipwise.advise.defaults import (
    DEFAULT_WORKLOAD,
    default_method,
    default_tokens,
    training_batch,
)
from chipwise.cost import with_energy_prices
from chipwise.errors import ChipwiseError, WorkloadError
from chipwise.hardware import Catalog, default_catalog
from chipwise.hardware.prices import UserPrices, load_prices_text, run_catalog
from chipwise.limits import check_quantity
from chipwise.report.advice import render_recommendation
from chipwise.report.advice_json import recommendation_to_dict
from chipwise.report.charts import WEB_EXTRA_HINT, ReportError, charts_for, figure_json
from chipwise.report.web.docs import docs_page
from chipwise.report.web.guard import LOOPBACK_HOSTS, Guard
from chipwise.report.web.models import (
    BODY_LIMIT_BYTES,
    UPLOAD_LIMIT_BYTES,
    AdviseBody,
    AdviseResponse,
    ChartOut,
    ChipOut,
    ChipsResponse,
    ErrorResponse,
    KindOut,
    ModelOut,
    UploadResponse,
    WorkloadsResponse,
)
from chipwise.report.web.pool import (
    DEFAULT_QUEUE,
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_WORKERS,
    AdvisePool,
    PoolFull,
    SharedAnswers,
    TimeLimitExceeded,
)
from chipwise.units import SECONDS_PER_DAY, parse_quantity
from chipwise.workload import accounting
from chipwise.workload.config import check_config_object, load_config, parse_config_bytes
from chipwise.workload.ir import Inference, Model, Training, TransformerSpec, Workload
from chipwise.workload.kinds import NON_ML_KINDS, find_kind
from chipwise.workload.presets import PRESETS, find_preset, load_preset

if TYPE_CHECKING:  # FastAPI is the optional [web] extra, imported in create_app
    from fastapi import FastAPI

TEXT_WIDTH = 100  # the terminal rendering sent with each answer, as a 100-column terminal
_STATIC = "static"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "The request cannot be answered as given."},
    413: {"model": ErrorResponse, "description": "The body or upload is over its size limit."},
    421: {
        "model": ErrorResponse,
        "description": "The Host header is not this machine's name (DNS-rebinding guard).",
    },
    422: {
        "model": ErrorResponse,
        "description": "The body does not match the schema (NaN and Infinity included); the "
        "body is never echoed back.",
    },
}
_ADVISE_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    503: {
        "model": ErrorResponse,
        "description": "Every advise worker is busy and the queue is full, or the request ran "
        "past its time limit; retry after the Retry-After seconds.",
    },
}


# ---- workloads ------------------------------------------------------------------------------


def model_for_web(name: str) -> Model:
    """A zoo model or a non-ML kind. Anything else (a path, module:factory, a primitive) is
    refused: the server reads no file and runs no code a request names."""
    preset = find_preset(name)
    if preset is not None:
        return load_preset(preset.id)
    kind = find_kind(name)
    if kind is not None:
        return kind
    from chipwise.workload.presets import close_presets

    close = close_presets(name)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise WorkloadError(
        f"unknown workload {name!r}{hint} (pick a zoo id from GET /api/workloads or a non-ML "
        "kind, or upload a config.json)"
    )


def safe_name(name: str) -> str:
    """A model name from an uploaded file name: letters, digits, '.', '_' and '-' only."""
    stem = name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    stem = stem[:-5] if stem.lower().endswith(".json") else stem
    return _SAFE_NAME.sub("-", stem).strip("-.")[:100] or "uploaded"


def read_uploaded_config(raw: dict[str, Any], name: str) -> TransformerSpec:
    """Read an uploaded config with the same reader as ``chipwise advise config.json``.

    The JSON object is written to a private temporary directory and read by
    ``workload.config.load_config`` (transformers' ``AutoConfig`` without remote code when
    installed, else the built-in reader); error messages name the upload, not the temp path.
    """
    label = safe_name(name)
    check_config_object(raw, f"{label}.json")
    with tempfile.TemporaryDirectory(prefix="chipwise-upload-") as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(raw), encoding="utf-8")
        try:
            return load_config(path, name=label)
        except ChipwiseError as err:
            message = str(err).replace(str(path), f"{label}.json").replace(tmp, "")
            raise WorkloadError(message) from None


def parse_upload(data: bytes, filename: str) -> tuple[dict[str, Any], TransformerSpec]:
    """An uploaded config.json: its JSON object and the model it describes, checked as a
    config file is (UTF-8, valid JSON, finite numbers, shallow nesting, keys in range)."""
    label = safe_name(filename)
    raw = parse_config_bytes(data, f"{label}.json")
    return raw, read_uploaded_config(raw, label)


def _one_line(message: str) -> str:
    """An error message on one line, at most 2000 characters (a hostile input never turns
    an answer into a page)."""
    text = " ".join(message.split())
    return text if len(text) <= 2000 else text[:1997] + "..."


def _quantity(option: str, value: float | str) -> float:
    if isinstance(value, int | float):
        return check_quantity(option, float(value), error=AdviseError)
    try:
        number = parse_quantity(value)
    except ValueError:
        raise AdviseError(
            f"{option} {value!r} is not a number; write e.g. 15T, 2.5e12, 300B or 1M"
        ) from None
    return check_quantity(option, number, error=AdviseError)


def request_from_body(body: AdviseBody, *, scan_paths: bool = True) -> AdviseRequest:
    """The ``AdviseRequest`` that ``chipwise advise`` builds from the same options.

    ``scan_paths``: whether ``body.project`` (a path on this machine) may be scanned; only a
    loopback-only server allows it, since the path names the server's files, not the
    browser's."""
    if body.config is not None:
        model: Model = read_uploaded_config(body.config, body.config_name)
    else:
        model = model_for_web(body.workload)
    tokens = _quantity("tokens", body.tokens) if body.tokens not in (None, "") else None
    if tokens is None and isinstance(model, TransformerSpec):
        tokens = default_tokens(model)
    batch_note = ""
    if body.phase == "train":
        method: str = body.method or "full"
        if body.method is None and isinstance(model, TransformerSpec):
            method = default_method(model, tokens_given=body.tokens not in (None, ""))
        batch, batch_note = training_batch(model, tokens, body.seq_len, body.global_batch)
        phase: Training | Inference = Training(
            seq_len=body.seq_len,
            global_batch=batch,
            method=method,
            lora_rank=body.lora_rank,
        )
    else:
        kv_dtype = "" if body.kv_dtype == "auto" else body.kv_dtype
        phase = Inference(batch=body.batch, input_len=body.input_len, output_len=body.output_len,
                          kv_dtype=kv_dtype)  # fmt: skip
    per_day = (
        _quantity("requests_per_day", body.requests_per_day)
        if body.requests_per_day not in (None, "")
        else 1e5
    )
    rps = body.rps
    if rps is not None:
        per_day = rps * SECONDS_PER_DAY
    elif body.engine_load and body.ttft_ms is None and body.tpot_ms is None:
        rps = per_day / SECONDS_PER_DAY  # load 'rps' without a rate: the daily load, evenly
    facts = None
    if body.project:
        if not scan_paths:
            raise AdviseError(
                "project scans by path are only available on a loopback server "
                "('chipwise serve' without --host); run 'chipwise advise --project PATH'"
            )
        from chipwise.advise.project import scan_facts

        facts = scan_facts(Path(body.project))
    return AdviseRequest(
        workload=Workload(model=model, phase=phase),
        tokens=tokens if body.phase == "train" else None,
        requests_per_day=per_day if body.phase == "infer" else None,
        rps=rps if body.phase == "infer" else None,
        ttft_p99_s=body.ttft_ms / 1e3 if body.ttft_ms is not None else None,
        tpot_p99_s=body.tpot_ms / 1e3 if body.tpot_ms is not None else None,
        cloud=body.cloud,
        pricing=body.pricing,
        own_hardware=body.own_hardware,
        budget_usd=body.budget_usd,
        deadline_days=body.deadline_days,
        objective=body.objective,
        framework=body.framework,
        precision=body.precision,
        chip_ids=tuple(c.strip() for c in body.chips if c.strip()),
        max_chips=body.max_chips,
        project=facts,
        porting=body.porting,
        batch_note=batch_note,
    )


def catalog_for_body(body: AdviseBody) -> tuple[Catalog, UserPrices | None]:
    """The packaged and cached prices, and the request's own ``prices`` on top."""
    catalog, _ = run_catalog(None)
    if body.prices is None:
        return catalog, None
    user = load_prices_text(body.prices, Path(body.prices_name), catalog)
    return catalog.with_offers(user.offers), user


def terminal_text(rec: Recommendation) -> str:
    """What ``chipwise advise`` prints, at ``TEXT_WIDTH`` columns without colour."""
    from rich.console import Console

    console = Console(
        width=TEXT_WIDTH,
        color_system=None,
        force_terminal=False,
        record=True,
        file=io.StringIO(),
        highlight=False,
    )
    console.print(render_recommendation(rec))
    return console.export_text(styles=False)


def advise_response(rec: Recommendation) -> AdviseResponse:
    return AdviseResponse(
        recommendation=recommendation_to_dict(rec),
        charts=[
            ChartOut(id=c.id, title=c.title, caption=c.caption, figure=figure_json(c.figure))
            for c in charts_for(rec)
        ],
        text=terminal_text(rec),
    )


@cache
def workloads_listing() -> WorkloadsResponse:
    models = []
    for p in PRESETS:
        spec = load_preset(p.id)
        models.append(
            ModelOut(
                id=p.id,
                title=p.title,
                aliases=list(p.aliases),
                moe=spec.is_moe,
                params_total=accounting.params_total(spec),
                params_active=accounting.params_active(spec),
            )
        )
    kinds = [KindOut(id=k.name, title=k.title) for k in NON_ML_KINDS]
    return WorkloadsResponse(default=DEFAULT_WORKLOAD, models=models, non_ml=kinds)


def chips_listing() -> ChipsResponse:
    return ChipsResponse(
        chips=[
            ChipOut(
                id=c.id,
                name=c.name,
                vendor=c.vendor,
                kind=c.kind,
                aliases=list(c.aliases),
                hbm_bytes=c.hbm_capacity_bytes,
                hbm_bytes_per_s=c.hbm_bytes_per_s,
                bf16_flops_per_s=c.dense_flops_per_s.get("bf16"),
                clouds=list(c.clouds),
                purchasable=c.purchasable,
            )
            for c in default_catalog().chips
        ]
    )


# ---- static files ---------------------------------------------------------------------------


def static_text(name: str) -> str:
    """A file of the page (``index.html``, ``app.js``, ``style.css``) from the package."""
    return (
        resources.files(__package__ or "chipwise.report.web")
        .joinpath(_STATIC, name)
        .read_text(encoding="utf-8")
    )


# ---- limits ---------------------------------------------------------------------------------

# Multipart framing around an uploaded file (boundaries, part headers) is well under this.
_MULTIPART_SLACK_BYTES = 16 * 1024


def _upload_too_large(n_bytes: int) -> str:
    return (
        f"the upload is {n_bytes:,}+ bytes; the limit is {UPLOAD_LIMIT_BYTES // 1024} KiB: "
        "upload the model's config.json only"
    )


def body_limit(path: str) -> int:
    """The largest body (bytes) a request to ``path`` may send."""
    if path == "/api/workloads/upload":
        return UPLOAD_LIMIT_BYTES + _MULTIPART_SLACK_BYTES
    return BODY_LIMIT_BYTES


def too_large(path: str, n_bytes: int) -> str:
    """The 413 message for a body of ``n_bytes`` (or more) sent to ``path``."""
    if path == "/api/workloads/upload":
        return _upload_too_large(n_bytes)
    return f"the request body is {n_bytes:,}+ bytes; the limit is {BODY_LIMIT_BYTES // 1024} KiB"


def _short_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """pydantic's errors without the input they were given (a body is never echoed back):
    type, location (each part cut at 64 characters) and message, at most 10."""
    out = []
    for e in list(errors)[:10]:
        loc = [p if isinstance(p, int) else str(p)[:64] for p in e.get("loc", ())]
        out.append({"type": str(e.get("type", "")), "loc": loc, "msg": str(e.get("msg", ""))})
    return out


def _validation_line(errors: list[dict[str, Any]]) -> str:
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
    return _one_line(f"{where}: {first['msg']}")


# ---- the app --------------------------------------------------------------------------------


def create_app(
    *,
    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS,
    workers: int = DEFAULT_WORKERS,
    queue: int = DEFAULT_QUEUE,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> "FastAPI":
    """Build the FastAPI app (``chipwise serve`` runs it with uvicorn).

    Args:
        allowed_hosts: names the Host header may carry (default: this machine's loopback
            names); None accepts any, for a server bound to a public address.
        workers, queue, time_limit_s: the advise pool (see ``pool.AdvisePool``).

    Raises:
        ReportError: FastAPI or plotly is not installed (``pip install 'chipwise[web]'``).
    """
    try:
        from fastapi import FastAPI, File, Request, UploadFile
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import HTMLResponse, JSONResponse, Response
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError as err:
        raise ReportError(
            f"the web UI needs FastAPI, which is not installed; {WEB_EXTRA_HINT}"
        ) from err

    from chipwise.report.html import plotly_js

    plotly_js()  # fail at start, not on the first page view, when plotly is missing
    app = FastAPI(
        title="chipwise",
        version=__version__,
        description="GPU or TPU, which chip, how many, at what cost: the advisor's JSON API. "
        'Every refusal is one line {"error": ...}, never the body echoed back: 400 what the '
        "CLI would refuse; 413 a body over 1 MiB or an upload over 256 KiB (chunked bodies "
        "included); 408 a body still arriving after 30 s; 421 a Host header that is not "
        "this machine's name (DNS-rebinding guard); "
        "422 a body that does not match the schema (NaN and Infinity included); 503 every "
        "advise worker busy or a request past its 5-minute limit (see Retry-After); 500 only for "
        "a bug, logged.",
        openapi_url="/api/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN; /api/docs below works offline
        redoc_url=None,
    )
    # Advise work runs on its own bounded pool (see pool.py), so /api/chips and the page stay
    # fast while it plans; a full pool is 503 at once, a request past its time limit 503.
    pool = AdvisePool(workers=workers, queue=queue, time_limit_s=time_limit_s)
    app.state.advise_pool = pool
    answers: SharedAnswers[AdviseResponse] = SharedAnswers()
    app.add_middleware(
        Guard,
        allowed_hosts=allowed_hosts,
        body_limit=body_limit,
        too_large=too_large,
    )

    @app.exception_handler(ChipwiseError)
    async def chipwise_error(request: Request, err: ChipwiseError) -> JSONResponse:
        if isinstance(err, PoolFull | TimeLimitExceeded):
            return JSONResponse(
                status_code=503, content={"error": str(err)}, headers={"Retry-After": "5"}
            )
        return JSONResponse(status_code=400, content={"error": _one_line(str(err))})

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, err: RequestValidationError) -> JSONResponse:
        detail = _short_errors(err.errors())
        return JSONResponse(
            status_code=422, content={"error": _validation_line(detail), "detail": detail}
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own refusals (a body it cannot parse: 400; an unknown path: 404; a wrong
        # method: 405) in the same {"error": ...} shape as every other answer.
        message = err.detail if isinstance(err.detail, str) else "the request was refused"
        return JSONResponse(
            status_code=err.status_code,
            content={"error": _one_line(message)},
            headers=getattr(err, "headers", None),
        )

    @app.exception_handler(RecursionError)
    async def too_deep(request: Request, err: RecursionError) -> JSONResponse:
        return JSONResponse(
            status_code=400, content={"error": "the request nests too deeply to be read"}
        )

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(static_text("index.html"))

    @app.get("/api/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return HTMLResponse(docs_page(app.openapi()))

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/static/app.js", include_in_schema=False)
    def app_js() -> Response:
        return Response(static_text("app.js"), media_type="text/javascript")

    @app.get("/static/style.css", include_in_schema=False)
    def style_css() -> Response:
        return Response(static_text("style.css"), media_type="text/css")

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_bundle() -> Response:
        return Response(
            plotly_js(),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    chips_body = chips_listing().model_dump_json().encode()  # the catalog does not change

    @app.get("/api/chips", response_model=ChipsResponse, tags=["catalog"])
    async def chips() -> Response:
        """The hardware catalog, briefly ('chipwise chips --json' has every figure)."""
        return Response(chips_body, media_type="application/json")

    @app.get("/api/workloads", response_model=WorkloadsResponse, tags=["workloads"])
    def workloads() -> WorkloadsResponse:
        """The model zoo and the non-ML kinds."""
        return workloads_listing()

    @app.post(
        "/api/workloads/upload",
        response_model=UploadResponse,
        responses=_ERRORS,
        tags=["workloads"],
    )
    def upload(file: UploadFile = File(...)) -> Any:
        """Read an uploaded config.json (JSON only, never executed; at most 256 KiB)."""
        data = file.file.read(UPLOAD_LIMIT_BYTES + 1)
        name = file.filename or "config.json"
        if len(data) > UPLOAD_LIMIT_BYTES:
            return JSONResponse(status_code=413, content={"error": _upload_too_large(len(data))})
        raw, spec = parse_upload(data, name)
        return UploadResponse(
            name=spec.name,
            config=raw,
            params_total=accounting.params_total(spec),
            params_active=accounting.params_active(spec),
            n_layers=spec.n_layers,
            d_model=spec.d_model,
            moe=spec.is_moe,
        )

    @app.post(
        "/api/advise", response_model=AdviseResponse, responses=_ADVISE_ERRORS, tags=["advise"]
    )
    async def advise(body: AdviseBody) -> AdviseResponse:
        """The recommendation for one request, as 'chipwise advise --json', with its charts.

        Runs on a bounded worker pool: 503 when it is full or the request runs past its time
        limit."""

        def job(check: Callable[[], None]) -> AdviseResponse:
            request = request_from_body(body, scan_paths=allowed_hosts is not None)
            catalog, user = catalog_for_body(body)
            if user is not None and user.energy is not None:
                request = replace(request, assumptions=with_energy_prices(user.energy))
            rec = recommend(request, catalog, progress=lambda chip, i, total: check())
            if user is not None:
                rec = replace(rec, notes=(*rec.notes, user.note))
            check()
            return advise_response(rec)

        return await answers.get(body.model_dump_json(), lambda: pool.run(job))

    return app
