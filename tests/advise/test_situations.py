"""Each situation of the article's "when to use which" table, end to end through recommend().

Chips and counts are restricted so each test plans a handful of options. No test hard-codes
which chip wins: where the article makes a claim about numbers, the expected verdict is
computed from the options the recommendation returns.
"""

from __future__ import annotations

import pytest

from chipwise.advise import Recommendation, recommend
from chipwise.advise.defaults import default_global_batch
from chipwise.advise.option import objective_key
from chipwise.advise.project import scan_facts
from chipwise.advise.situations import describe, is_workstation_card
from chipwise.cost import OwnedRunCost
from chipwise.hardware import default_catalog
from chipwise.workload.load import load_workload_model

from .factories import FIXTURES, best_of_kind, training

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")


def reason(rec: Recommendation, rule: str):  # type: ignore[no-untyped-def]
    found = [r for r in rec.reasons if r.rule == rule]
    assert found, f"no {rule!r} reason among {[r.rule for r in rec.reasons]}"
    return found[0]


def excluded(rec: Recommendation) -> dict[str, str]:
    return {e.chip_id: e.why for e in rec.excluded}


# ---- training massive models at scale -> TPU, when the numbers agree ----------------------

MASSIVE_CHIPS = ("h100-sxm", "b200", "tpu-v5p", "tpu-v6e")
# The batch such a run uses (advise's default: the DeepSeek LLM law at its compute).
RULE_BATCH_405B = default_global_batch(load_workload_model("llama3-405b"), 15e12, 4096)[0]


@pytest.mark.parametrize("objective", ["cost", "time", "energy"])
def test_massive_training_compares_best_tpu_with_best_gpu_and_says_if_the_article_holds(
    objective: str,
) -> None:
    req = training(
        "llama3-405b",
        tokens=15e12,
        chips=MASSIVE_CHIPS,
        max_chips=16384,
        objective=objective,
        global_batch=RULE_BATCH_405B,
    )
    rec = recommend(req)
    r = reason(rec, "massive-training")
    gpu = best_of_kind(rec.options, req, tpu=False)
    tpu = best_of_kind(rec.options, req, tpu=True)
    assert gpu is not None and tpu is not None, rec.excluded
    assert (rec.best_gpu, rec.best_tpu) == (gpu, tpu)
    key = objective_key(req)
    tpu_wins = key(tpu)[0] < key(gpu)[0]
    assert r.agrees_with_article is tpu_wins
    assert r.favours == ("tpu" if tpu_wins else "gpu")
    assert ("and here they do" in r.text) is tpu_wins
    assert "article" not in r.text and "rule of thumb" not in r.text
    # both options' numbers are cited
    assert f"best TPU: {describe(tpu)}" in r.evidence
    assert f"best GPU: {describe(gpu)}" in r.evidence
    assert "406B parameters" in r.text and "15T tokens" in r.text


def test_massive_training_with_only_tpus_says_the_comparison_cannot_be_made() -> None:
    rec = recommend(
        training(
            "llama3-405b",
            tokens=15e12,
            chips=("tpu-v5p",),
            max_chips=8192,
            global_batch=RULE_BATCH_405B,
            deadline_days=365.0,
        )
    )
    r = reason(rec, "massive-training")
    assert r.agrees_with_article is None
    assert "only TPU options" in r.text


def test_a_small_fine_tune_is_not_massive() -> None:
    rec = recommend(training("gpt2", tokens=1e8, chips=("h100-sxm", "tpu-v5e"), max_chips=8))
    assert "massive-training" not in {r.rule for r in rec.reasons}


# ---- local development, mixed workloads, wide framework support -> GPU ------------------


def test_a_small_pytorch_model_on_one_gpu_is_local_development() -> None:
    req = training(
        "gpt2",
        tokens=1e8,
        chips=("rtx-4090", "l4", "h100-sxm", "mi300x", "tpu-v5e"),
        max_chips=8,
        framework="pytorch",
        own_hardware=True,
    )
    rec = recommend(req)
    r = reason(rec, "local-development")
    assert r.favours == "gpu"
    fits = next(e for e in r.evidence if e.startswith("fits on one "))
    chip_id = fits.removeprefix("fits on one ").split(" ")[0]
    chip = default_catalog().chip(chip_id)
    assert chip.kind == "gpu" and chip.purchasable
    assert ("workstation" in fits) is is_workstation_card(chip)
    assert any("PyTorch" in e and "torch_xla" in e for e in r.evidence)


def test_a_datacentre_gpu_is_not_called_a_workstation_card() -> None:
    rec = recommend(training("gpt2", tokens=1e8, chips=("mi300x",), max_chips=2))
    fits = next(e for e in reason(rec, "local-development").evidence if "fits on one" in e)
    assert "mi300x" in fits and "workstation" not in fits


@pytest.mark.parametrize(
    ("chip_id", "workstation"),
    [
        ("rtx-4090", True),
        ("rtx-5090", True),
        ("l4", True),
        ("l40s", True),
        ("mi300x", False),
        ("h100-sxm", False),
        ("b200", False),
        ("tpu-v5e", False),
    ],
)
def test_workstation_cards_are_decided_from_catalog_facts(chip_id: str, workstation: bool) -> None:
    assert is_workstation_card(default_catalog().chip(chip_id)) is workstation


# ---- CUDA-specific libraries -> GPU ------------------------------------------------------


def test_a_cuda_kernel_project_names_the_kernel_with_file_line_and_porting_path() -> None:
    req = training(
        chips=("h100-sxm", "mi300x", "tpu-v5p"),
        max_chips=16,
        project=scan_facts(FIXTURES / "cuda_ext"),
    )
    rec = recommend(req)
    r = reason(rec, "cuda-libraries")
    assert r.favours == "gpu"
    assert "custom CUDA kernel" in r.text
    (line,) = [e for e in r.evidence if e.startswith("custom CUDA kernel") and "on TPU" in e]
    assert "csrc/kernel.cu:4" in line and "setup.py:19" in line
    assert "Pallas" in line
    why = excluded(rec)["tpu-v5p"]
    assert "needs a port" in why and "custom CUDA kernel" in why and "kernel.cu:4" in why
    assert rec.pick is not None and rec.pick.chip.kind == "gpu"
    if rec.pick.chip.vendor == "amd":  # a GPU, but not CUDA's: the port is named, not hidden
        assert any("hipify" in e for e in r.evidence)
        assert any(f"the pick, {rec.pick.chip.id}" in e for e in r.evidence)


def test_a_non_nvidia_pick_for_a_cuda_project_says_what_the_port_costs_there() -> None:
    req = training(chips=("mi300x",), max_chips=16, project=scan_facts(FIXTURES / "cuda_ext"))
    rec = recommend(req)
    assert rec.pick is not None and rec.pick.chip.id == "mi300x"
    r = reason(rec, "cuda-libraries")
    assert any("on amd-rocm: hipify" in e for e in r.evidence)
    assert any("NVIDIA GPUs run it as is" in e for e in r.evidence)


def test_a_triton_project_cannot_run_on_tpu() -> None:
    rec = recommend(
        training(
            chips=("h100-sxm", "tpu-v5p"),
            max_chips=16,
            project=scan_facts(FIXTURES / "triton_proj"),
        )
    )
    assert "Triton kernel" in reason(rec, "cuda-libraries").text
    assert "triton" in excluded(rec)["tpu-v5p"]
    assert rec.best_tpu is None


# ---- already on Google Cloud / TensorFlow / JAX -> TPU -----------------------------------


def test_gcp_and_jax_make_the_google_rule_fire_with_both_options_numbers() -> None:
    req = training(
        chips=("h100-sxm", "tpu-v5e", "tpu-v6e"), max_chips=64, cloud="gcp", framework="jax"
    )
    rec = recommend(req)
    r = reason(rec, "google-ecosystem")
    assert "Google Cloud" in r.text and "jax" in r.text
    gpu = best_of_kind(rec.options, req, tpu=False)
    tpu = best_of_kind(rec.options, req, tpu=True)
    assert gpu is not None and tpu is not None
    key = objective_key(req)
    assert r.agrees_with_article is (key(tpu)[0] < key(gpu)[0])
    assert f"best TPU: {describe(tpu)}" in r.evidence
    assert all(o.price_label.startswith("gcp ") for o in rec.options)


def test_a_tensorflow_project_excludes_tpu7x_and_says_why() -> None:
    chips = ("h100-sxm", "tpu-v6e", "tpu-v7")
    base = training(chips=chips, max_chips=16, objective="time")
    assert "tpu-v7" not in excluded(recommend(base))  # it runs the job without TensorFlow
    rec = recommend(
        training(
            chips=chips, max_chips=16, objective="time", project=scan_facts(FIXTURES / "tf_proj")
        )
    )
    assert "tensorflow" in excluded(rec)["tpu-v7"]
    r = reason(rec, "google-ecosystem")
    assert any("TensorFlow is not supported on" in e and "TPU7x" in e for e in r.evidence)


def test_framework_tensorflow_excludes_chips_without_it() -> None:
    rec = recommend(
        training(
            chips=("tpu-v6e", "tpu-v7"), max_chips=16, objective="time", framework="tensorflow"
        )
    )
    assert "tensorflow" in excluded(rec)["tpu-v7"]
    assert [o.chip.id for o in rec.options] == ["tpu-v6e"]


# ---- hardware you can own -> GPU ---------------------------------------------------------


def test_own_hardware_excludes_tpus_as_cloud_only_and_prices_gpus_by_tco() -> None:
    req = training(
        chips=("h100-sxm", "mi300x", "tpu-v5p", "tpu-v6e"), max_chips=16, own_hardware=True
    )
    rec = recommend(req)
    why = excluded(rec)
    assert why["tpu-v5p"].startswith("cloud only") and why["tpu-v6e"].startswith("cloud only")
    assert rec.options and all(isinstance(o.cost, OwnedRunCost) for o in rec.options)
    assert all(o.price_label.startswith("owned, TCO") for o in rec.options)
    assert reason(rec, "own-hardware").favours == "gpu"
    assert rec.best_tpu is None


# ---- non-ML workloads --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["graphics", "fp64-hpc", "hashing", "video-encode"])
def test_a_tpu_cannot_run_non_ml_work_and_the_reason_says_why(kind: str) -> None:
    from chipwise.advise import AdviseRequest
    from chipwise.workload.ir import Workload

    model = load_workload_model(kind)
    rec = recommend(AdviseRequest(workload=Workload(model=model)))
    assert rec.non_ml is not None and rec.pick is None
    cat = default_catalog()
    tpus = {c.id for c in cat.chips if c.kind == "tpu"}
    assert tpus <= set(excluded(rec))
    assert all("tensor math" in excluded(rec)[t] for t in tpus)
    (r,) = rec.reasons
    assert "cannot run on a TPU" in r.text
    assert all(req.why in r.text for req in model.requirements)
    assert rec.non_ml.capable
    assert all(cat.chip(c).kind == "gpu" for c in rec.non_ml.capable)


def test_fp64_work_ranks_only_chips_with_an_fp64_rate_fastest_first() -> None:
    from chipwise.advise import AdviseRequest
    from chipwise.workload.ir import Workload

    rec = recommend(AdviseRequest(workload=Workload(model=load_workload_model("fp64-hpc"))))
    assert rec.non_ml is not None
    cat = default_catalog()
    capable = [cat.chip(c) for c in rec.non_ml.capable]
    assert capable and all(c.supports("fp64") for c in capable)
    rates = [c.peak_flops_per_s("fp64") for c in capable]
    assert rates == sorted(rates, reverse=True)
    no_fp64 = [c.id for c in cat.chips if c.kind == "gpu" and not c.supports("fp64")]
    assert all("fp64" in excluded(rec)[c] for c in no_fp64)


@pytest.mark.parametrize(
    ("kind", "feature"), [("graphics", "raster"), ("video-encode", "media-encode")]
)
def test_non_ml_answers_list_only_chips_with_the_needed_catalog_capability(
    kind: str, feature: str
) -> None:
    from chipwise.advise import AdviseRequest
    from chipwise.workload.ir import Workload

    rec = recommend(AdviseRequest(workload=Workload(model=load_workload_model(kind))))
    assert rec.non_ml is not None and rec.non_ml.capable
    cat = default_catalog()
    assert all(cat.chip(c).has_feature(feature) for c in rec.non_ml.capable)
    lacking = [c.id for c in cat.chips if c.kind == "gpu" and not c.has_feature(feature)]
    assert all(feature in excluded(rec)[c] for c in lacking)
