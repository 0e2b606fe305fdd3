"""A request that cannot be answered as given is an AdviseError naming the bad value."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chipwise.advise import AdviseError, AdviseRequest
from chipwise.errors import ChipwiseError
from chipwise.workload.ir import Workload
from chipwise.workload.load import load_workload_model

from .factories import training


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"budget_usd": -5.0}, "--budget-usd must be a positive number"),
        ({"deadline_days": 0.0}, "--deadline-days must be a positive number"),
        ({"tokens": float("nan")}, "--tokens must be a positive number"),
        ({"tokens": -1.0}, "--tokens must be a positive number"),
        ({"max_chips": 0}, "--max-chips must be >= 1"),
        ({"objective": "speed"}, "unknown objective 'speed'"),
        ({"cloud": "ibm"}, "unknown cloud 'ibm'"),
        ({"pricing": "reserved"}, "unknown pricing 'reserved'"),
        ({"precision": "fp3"}, "unknown precision 'fp3'"),
    ],
)
def test_a_bad_request_names_the_bad_value(change: dict[str, object], message: str) -> None:
    with pytest.raises(AdviseError, match=message.replace("(", r"\(")):
        replace(training(chips=("h100-sxm",)), **change)  # type: ignore[arg-type]


def test_advise_errors_are_chipwise_errors() -> None:
    assert issubclass(AdviseError, ChipwiseError)


def test_a_primitive_is_not_something_to_advise_on() -> None:
    wl = Workload(model=load_workload_model("matmul:4096x4096x4096"))
    with pytest.raises(AdviseError, match="chipwise predict"):
        AdviseRequest(workload=wl)
