"""``chipwise advise`` through the CLI: the situations end to end, --json, one-line errors."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chipwise.advise import Recommendation, recommend
from chipwise.cli import app
from chipwise.report import advice_json

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

FIXTURES = Path(__file__).parents[1] / "compat" / "fixtures"
runner = CliRunner()
# the package, where the CLI reads ``recommend`` when a command runs (the attribute
# chipwise.advise of the top-level package is the function of the same name)
advise_package = importlib.import_module("chipwise.advise")
SMALL = ["--chips", "h100-sxm,mi300x,tpu-v5e,tpu-v6e", "--max-chips", "64"]

_SEARCHED: dict[str, Recommendation] = {}


@pytest.fixture(autouse=True)
def _one_search_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands here that ask the same question (SMALL as JSON, as text at two widths, as
    HTML, ...) share one search: ``recommend`` is pure, so a repeated request, catalog and
    worker count reads the first answer. These tests check the CLI's options and output;
    tests/advise checks the search."""

    def shared(request: Any, catalog: Any = None, **kwargs: Any) -> Recommendation:
        key = repr((request, catalog, kwargs.get("workers")))
        if key not in _SEARCHED:
            _SEARCHED[key] = recommend(request, catalog, **kwargs)
        return _SEARCHED[key]

    monkeypatch.setattr(advise_package, "recommend", shared)


def advise(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = runner.invoke(app, ["advise", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def by_rule(data: dict[str, Any], rule: str) -> dict[str, Any]:
    found = [r for r in data["reasons"] if r["rule"] == rule]
    assert found, [r["rule"] for r in data["reasons"]]
    return found[0]


def excluded(data: dict[str, Any]) -> dict[str, str]:
    return {e["chip"]: e["why"] for e in data["excluded"]}


def _objective(option: dict[str, Any], objective: str) -> float:
    field = {"cost": "usd", "time": "days", "energy": "kwh"}[objective]
    value = option[field]
    assert value is not None
    return float(value)


# ---- the default command -----------------------------------------------------------------


def test_the_default_command_prints_a_table_a_recommendation_and_reasons() -> None:
    result = runner.invoke(app, ["advise", "--quiet"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    text = " ".join(out.split())  # rich wraps long lines
    assert "Best option per chip (objective: cost; on-demand prices, any cloud)" in text
    assert "Recommendation:" in text and "Why:" in text and "Confidence:" in text
    assert "0.00 d" not in text and "0.0 MWh" not in text
    assert "no cloud price in the catalog" in text
    assert "no cloud offer on any" not in text
    # every row of the table has a run time and an energy with a unit
    rows = [ln for ln in out.splitlines() if re.match(r"^│\s+\d+ │", ln)]
    assert rows
    for row in rows:
        assert re.search(r"\d (s|min|h|d) │", row), row
        assert re.search(r"\d (Wh|kWh|MWh|GWh) │", row), row


def test_the_price_label_says_which_pricing() -> None:
    for pricing in ("on-demand", "spot"):
        data = advise(*SMALL, "--pricing", pricing)
        assert data["constraints"]["pricing"] == pricing
        assert data["options"]
        assert all(f" {pricing} " in o["price"] for o in data["options"])


# ---- the article's situations ------------------------------------------------------------


def test_massive_training_agrees_with_the_article_iff_the_best_tpu_wins() -> None:
    data = advise(
        "llama3-405b",
        "--tokens",
        "15T",
        "--chips",
        "h100-sxm,b200,tpu-v5p,tpu-v6e",
        "--max-chips",
        "16384",
    )
    r = by_rule(data, "massive-training")
    gpu, tpu = data["best_gpu"], data["best_tpu"]
    assert gpu is not None and tpu is not None
    gpus = [o for o in data["options"] if o["kind"] != "tpu"]
    tpus = [o for o in data["options"] if o["kind"] == "tpu"]
    assert gpu == min(gpus, key=lambda o: o["usd"]) and tpu == min(tpus, key=lambda o: o["usd"])
    assert r["agrees_with_article"] is (tpu["usd"] < gpu["usd"])
    assert any(
        e.startswith(f"best TPU: {tpu['chip']} ×{tpu['total_chips']}") for e in r["evidence"]
    )
    assert any(
        e.startswith(f"best GPU: {gpu['chip']} ×{gpu['total_chips']}") for e in r["evidence"]
    )


def test_local_development_with_pytorch_on_a_small_model() -> None:
    data = advise(
        "gpt2",
        "--tokens",
        "100M",
        "--framework",
        "pytorch",
        "--chips",
        "rtx-4090,l4,h100-sxm,tpu-v5e",
        "--max-chips",
        "8",
        "--own-hardware",
    )
    r = by_rule(data, "local-development")
    assert r["favours"] == "gpu"
    assert any(e.startswith("fits on one ") for e in r["evidence"])
    assert data["pick"]["kind"] == "gpu"


def test_a_cuda_kernel_project_keeps_tpus_out_and_names_the_kernel() -> None:
    data = advise(*SMALL, "--project", str(FIXTURES / "cuda_ext"))
    r = by_rule(data, "cuda-libraries")
    assert any("csrc/kernel.cu:4" in e and "Pallas" in e for e in r["evidence"])
    why = excluded(data)
    assert "needs a port" in why["tpu-v5e"] and "needs a port" in why["tpu-v6e"]
    assert data["best_tpu"] is None


def test_a_tensorflow_project_on_gcp_excludes_tpu7x() -> None:
    data = advise(
        "--chips",
        "h100-sxm,tpu-v6e,tpu-v7",
        "--max-chips",
        "16",
        "--cloud",
        "gcp",
        "--objective",
        "time",
        "--project",
        str(FIXTURES / "tf_proj"),
    )
    assert "tensorflow" in excluded(data)["tpu-v7"]
    r = by_rule(data, "google-ecosystem")
    if data["best_gpu"] and data["best_tpu"]:
        assert r["agrees_with_article"] is (data["best_tpu"]["days"] < data["best_gpu"]["days"])


def test_jax_on_gcp_fires_the_google_rule() -> None:
    data = advise(*SMALL, "--cloud", "gcp", "--framework", "jax")
    r = by_rule(data, "google-ecosystem")
    assert r["favours"] == "tpu" and "jax" in r["text"]


def test_own_hardware_is_cloud_only_for_tpus_and_tco_for_gpus() -> None:
    data = advise(*SMALL, "--own-hardware")
    why = excluded(data)
    assert why["tpu-v5e"].startswith("cloud only") and why["tpu-v6e"].startswith("cloud only")
    assert data["options"] and all(o["price"].startswith("owned, TCO") for o in data["options"])
    assert by_rule(data, "own-hardware")["favours"] == "gpu"


@pytest.mark.parametrize("kind", ["graphics", "fp64-hpc", "hashing", "video-encode"])
def test_non_ml_work_is_not_for_a_tpu(kind: str) -> None:
    data = advise(kind)
    assert data["non_ml"]["workload"] == kind
    assert data["pick"] is None and data["non_ml"]["capable_chips"]
    assert all("tensor math" in w for c, w in excluded(data).items() if c.startswith("tpu"))
    (r,) = data["reasons"]
    assert "cannot run on a TPU" in r["text"]


def test_non_ml_text_output_lists_capable_chips() -> None:
    result = runner.invoke(app, ["advise", "fp64-hpc"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    # words, not lines: under pytest-xdist another test in the worker may have left the
    # shared console narrower than COLUMNS, and the sentence then wraps
    text = " ".join(result.stdout.split())
    assert "cannot run on a TPU" in text and "dense fp64 FLOP/s" in text


# ---- constraints and objectives ----------------------------------------------------------


def test_budget_and_deadline_exclude_with_the_reason() -> None:
    free = advise(*SMALL)
    costs = sorted(o["usd"] for o in free["options"])
    budget = (costs[0] + costs[-1]) / 2
    data = advise(*SMALL, "--budget-usd", f"{budget}")
    assert all(o["usd"] <= budget for o in data["options"])
    assert any("over the budget" in w for w in excluded(data).values())
    data = advise(*SMALL, "--deadline-days", "0.01")
    assert all(o["days"] <= 0.01 for o in data["options"])
    assert any("the deadline (0.01 days)" in w for w in excluded(data).values())


def test_aws_never_yields_a_tpu() -> None:
    data = advise(*SMALL, "--cloud", "aws", "--objective", "time")
    assert data["best_tpu"] is None
    assert all(o["kind"] != "tpu" for o in data["options"])


@pytest.mark.parametrize("objective", ["cost", "time", "energy"])
def test_the_pick_is_the_best_listed_option_for_the_objective(objective: str) -> None:
    data = advise(*SMALL, "--objective", objective)
    values = [_objective(o, objective) for o in data["options"]]
    assert values == sorted(values)
    assert data["pick"] == data["options"][0]


# ---- JSON --------------------------------------------------------------------------------

TOP_KEYS = {
    "schema_version", "workload", "phase", "objective", "constraints", "pick", "best_gpu",
    "best_tpu", "options", "excluded", "reasons", "confidence", "notes", "non_ml", "training",
    "ownership", "single_card",
}  # fmt: skip
TRAINING_KEYS = {"method", "lora_rank", "lora_targets", "seq_len", "global_batch"}
CONSTRAINT_KEYS = {
    "cloud", "pricing", "own_hardware", "budget_usd", "deadline_days", "framework", "tokens",
    "requests_per_day", "rps", "ttft_p99_s", "tpot_p99_s", "kv_dtype", "disaggregation",
    "precision", "chips",
    "max_chips",
    "deadline_limit_days", "global_batch", "batch_note",
}  # fmt: skip
OPTION_KEYS = {
    "chip", "kind", "chips", "replicas", "total_chips", "plan", "days", "usd", "price", "offer",
    "kwh", "kg_co2e", "memory_per_chip_bytes", "capacity_bytes",
}  # fmt: skip
TRAIN_KEYS = {"tokens_per_s_per_chip", "step_time_s", "mfu"}
SERVE_KEYS = {
    "output_tokens_per_s", "output_tokens_per_s_per_chip", "ttft_s", "tpot_s", "ttft_p99_s",
    "tpot_p99_s", "load", "usd_per_day", "usd_per_million_output_tokens", "disaggregated",
}  # fmt: skip
REASON_KEYS = {
    "rule", "situation", "favours", "text", "evidence", "agrees_with_article", "break_even",
}  # fmt: skip
CONFIDENCE_KEYS = {
    "kind", "scope", "what", "rows", "median_abs_error", "p90_abs_error", "note", "latency",
}  # fmt: skip
NON_ML_KEYS = {"workload", "capable_chips", "basis", "work", "options"}


def test_every_key_in_these_sets_is_documented() -> None:
    doc = advice_json.__doc__ or ""
    for key in (TOP_KEYS | CONSTRAINT_KEYS | OPTION_KEYS | TRAIN_KEYS | SERVE_KEYS | REASON_KEYS
                | CONFIDENCE_KEYS | NON_ML_KEYS | TRAINING_KEYS):  # fmt: skip
        assert f'"{key}"' in doc, key


def test_training_json_has_every_documented_key() -> None:
    data = advise(*SMALL)
    assert set(data) == TOP_KEYS and data["schema_version"] == 1
    assert set(data["constraints"]) == CONSTRAINT_KEYS
    assert set(data["training"]) == TRAINING_KEYS
    for o in [data["pick"], data["best_gpu"], data["best_tpu"], *data["options"]]:
        assert set(o) == OPTION_KEYS | TRAIN_KEYS
    assert all(set(r) == REASON_KEYS for r in data["reasons"])
    assert set(data["confidence"]) == CONFIDENCE_KEYS
    assert all(set(e) == {"chip", "why"} for e in data["excluded"])


def test_serving_json_has_every_documented_key() -> None:
    data = advise("--phase", "infer", "--chips", "h100-sxm,tpu-v6e", "--max-chips", "8")
    assert data["phase"] == "infer" and data["options"]
    for o in data["options"]:
        assert set(o) == OPTION_KEYS | SERVE_KEYS
        assert o["days"] is None


def test_non_ml_json_has_every_documented_key() -> None:
    data = advise("hashing")
    assert set(data) == TOP_KEYS and set(data["non_ml"]) == NON_ML_KEYS


# ---- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["not-a-model"], "not-a-model"),
        (["--chips", "h100-sxm,h10"], "h10"),
        (["--budget-usd", "-5"], "--budget-usd"),
        (["--tokens", "abc"], "--tokens 'abc' is not a number"),
        (["--tokens", "0"], "--tokens must be a positive number"),
        (["--requests-per-day", "lots", "--phase", "infer"], "--requests-per-day 'lots'"),
        (["--precision", "fp3"], "unknown precision 'fp3'"),
        (["--max-chips", "0"], "--max-chips"),
        (["matmul:1024x1024x1024"], "primitive"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["advise", *args, "--quiet"])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and says in lines[0]
    assert "Traceback" not in result.output


# ---- the scan never executes the project --------------------------------------------------


def test_advise_with_a_project_executes_none_of_its_files(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    result = runner.invoke(
        app,
        ["advise", *SMALL, "--quiet", "--project", str(FIXTURES / "cuda_ext")],
        env={"CHIPWISE_SCAN_MARKER": str(marker)},
    )
    assert result.exit_code == 0, result.output
    assert not marker.exists()


# ---- checked before the planning starts -------------------------------------------------


@pytest.fixture
def no_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    """These errors must come before the (slow) planning, not after it."""

    def planned(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("recommend() ran before the bad option was caught")

    monkeypatch.setattr(advise_package, "recommend", planned)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--chips", ","], "--chips ',' names no chip"),
        (["--chips", " "], "names no chip"),
        (["--html", "."], "it is a directory"),
        (["--html", "no/such/folder/report.html"], "does not exist"),
    ],
)
def test_bad_output_and_chip_options_fail_before_planning(
    no_planning: None, args: list[str], says: str
) -> None:
    result = runner.invoke(app, ["advise", *args])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0]


def test_html_report_is_written_and_json_stays_clean(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["advise", *SMALL, "--json", "--html", str(report)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["schema_version"] == 1 and result.stderr == ""
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("columns", [80, 120])
def test_wrapped_lines_keep_their_indent(columns: int) -> None:
    result = runner.invoke(app, ["advise", *SMALL, "--quiet"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(ln) for ln in lines) <= columns
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Why:"))
    top_level = ("•", "Excluded:", "Note:", "Confidence:")
    for line in lines[start + 1 :]:
        assert line.startswith((" ", *top_level)), line


def test_html_without_plotly_still_writes_the_report_with_static_charts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    report = tmp_path / "r.html"
    result = runner.invoke(app, ["advise", *SMALL, "--quiet", "--html", str(report)])
    assert result.exit_code == 0, result.output
    assert "Recommendation:" in result.stdout
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2
    assert "Plotly.newPlot" not in page and "pip install &#x27;chipwise[web]&#x27;" in page


def test_google_scale_training_answers_at_the_scale_it_means() -> None:
    """Issue 11's command, no other flag: a pick within the 120-day default deadline, a best
    GPU and a best TPU, runs of 8,192+ chips among the options, v6e beyond one 256-chip pod,
    the batch law and the deadline stated."""
    data = advise("llama3-405b", "--phase", "train", "--tokens", "15T", "--cloud", "gcp",
                  "--framework", "jax")  # fmt: skip
    assert data["pick"] and data["best_gpu"] and data["best_tpu"]
    assert data["pick"]["days"] <= 120
    assert max(o["total_chips"] for o in data["options"]) >= 8192
    v6e = [o for o in data["options"] if o["chip"] == "tpu-v6e"]
    assert v6e and v6e[0]["total_chips"] > 256
    constraints = data["constraints"]
    assert constraints["max_chips"] is None and constraints["deadline_limit_days"] == 120
    assert "2401.02954" in constraints["batch_note"]
    rule = by_rule(data, "massive-training")
    assert rule["agrees_with_article"] is not None
