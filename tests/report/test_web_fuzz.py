"""Property-based fuzzing of the web API's bodies (issue 14): any JSON body, any bytes, any
upload is answered with a 2xx or a one-line 4xx/503, never a 500. The planner itself is
stubbed here (its inputs are what is fuzzed; ``test_web.py`` runs it for real)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("plotly")

from fastapi.testclient import TestClient
from pydantic import ValidationError

import chipwise.report.web.app as web_app
from chipwise.advise import AdviseRequest
from chipwise.errors import ChipwiseError
from chipwise.report.web import create_app
from chipwise.report.web.models import AdviseBody

FUZZ = settings(
    max_examples=60,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
REFUSALS = {400, 413, 421, 422, 503}

FIELDS = list(AdviseBody.model_fields)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(),  # NaN and Infinity included: json.dumps writes them
    st.text(max_size=20),
    st.sampled_from(["llama3-8b", "train", "infer", "h100", "15T", "1e400", "nan", "bf16"]),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
BODIES = st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=10)), VALUES)


TINY_LLAMA = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
}  # fmt: skip


class _Stubbed(ChipwiseError):
    """Raised instead of planning, so a fuzzed body that passes every check answers fast."""


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    def stub(request: AdviseRequest, *args: Any, **kwargs: Any) -> Any:
        assert isinstance(request, AdviseRequest)
        raise _Stubbed("planning stubbed in the fuzz test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(web_app, "recommend", stub)
        with TestClient(create_app()) as c:
            # Warm up: the first config read imports transformers (seconds), which is not
            # what the per-example deadline bounds.
            warm = json.dumps(TINY_LLAMA).encode()
            c.post("/api/workloads/upload", files={"file": ("c.json", warm, "application/json")})
            yield c


def _one_line_refusal(response: Any) -> None:
    assert response.status_code in REFUSALS, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert isinstance(error, str) and "\n" not in error and len(error) <= 2000


@FUZZ
@given(BODIES)
def test_any_body_is_a_request_or_a_clear_refusal(client: TestClient, body: dict[str, Any]) -> None:
    del client  # only for its warm-up (transformers imported before the deadline counts)
    try:
        parsed = AdviseBody.model_validate(body)
    except ValidationError:
        return
    try:
        assert isinstance(web_app.request_from_body(parsed), AdviseRequest)
    except ChipwiseError as err:
        assert "\n" not in str(err)


@FUZZ
@given(BODIES)
def test_any_json_body_is_never_a_500(client: TestClient, body: dict[str, Any]) -> None:
    raw = json.dumps(body, allow_nan=True).encode()
    response = client.post("/api/advise", content=raw, headers={"content-type": "application/json"})
    _one_line_refusal(response)


@FUZZ
@given(st.binary(max_size=3000), st.sampled_from(["application/json", "text/plain", ""]))
def test_any_bytes_are_never_a_500(client: TestClient, data: bytes, content_type: str) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = client.post("/api/advise", content=data, headers=headers)
    _one_line_refusal(response)


@FUZZ
@given(st.one_of(st.binary(max_size=3000), VALUES.map(lambda v: json.dumps(v).encode())))
def test_any_upload_is_a_model_or_a_400(client: TestClient, data: bytes) -> None:
    response = client.post(
        "/api/workloads/upload", files={"file": ("config.json", data, "application/json")}
    )
    if response.status_code != 200:
        _one_line_refusal(response)
