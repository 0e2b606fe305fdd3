"""Builders for the advisor tests: small requests over a few chips, so each test is fast."""

from __future__ import annotations

from pathlib import Path

from chipwise.advise import AdviseRequest
from chipwise.advise.option import Option, objective_key
from chipwise.workload.ir import Inference, Training, Workload
from chipwise.workload.load import load_workload_model

FIXTURES = Path(__file__).parents[1] / "compat" / "fixtures"


def training(
    model: str = "llama3-8b",
    *,
    tokens: float = 1e9,
    chips: tuple[str, ...] = ("h100-sxm", "mi300x", "tpu-v5e", "tpu-v6e"),
    max_chips: int = 64,
    seq_len: int = 4096,
    global_batch: int = 256,
    **kw: object,
) -> AdviseRequest:
    """A training request restricted to ``chips`` and ``max_chips``."""
    wl = Workload(
        model=load_workload_model(model),
        phase=Training(seq_len=seq_len, global_batch=global_batch),
    )
    return AdviseRequest(
        workload=wl,
        tokens=tokens,
        chip_ids=chips,
        max_chips=max_chips,
        **kw,  # type: ignore[arg-type]
    )


def serving(
    model: str = "llama3-8b",
    *,
    requests_per_day: float = 1e5,
    chips: tuple[str, ...] = ("h100-sxm", "tpu-v6e"),
    max_chips: int = 8,
    input_len: int = 1024,
    **kw: object,
) -> AdviseRequest:
    wl = Workload(
        model=load_workload_model(model),
        phase=Inference(batch=32, input_len=input_len, output_len=256),
    )
    return AdviseRequest(
        workload=wl,
        requests_per_day=requests_per_day,
        chip_ids=chips,
        max_chips=max_chips,
        **kw,  # type: ignore[arg-type]
    )


def best_of_kind(options: tuple[Option, ...], request: AdviseRequest, tpu: bool) -> Option | None:
    """The best option of one kind by the objective, computed here from the options."""
    key = objective_key(request)
    mine = [o for o in options if (o.chip.kind == "tpu") == tpu]
    return min(mine, key=key, default=None)
