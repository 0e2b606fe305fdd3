"""Hypothetical chips: derived from a catalog chip on the command line, or read from a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.hardware import default_catalog
from chipwise.hardware.hypothetical import (
    USER_SUPPLIED,
    HypotheticalChipError,
    derive_chip,
    field_names,
    load_chip_file,
    with_user_chips,
)
from chipwise.perf import InferPrediction, predict
from chipwise.workload.ir import Inference, Workload
from chipwise.workload.load import load_workload_model

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")

MYCHIP = Path(__file__).parent / "data" / "mychip.toml"
runner = CliRunner()


def test_derived_chip_scales_and_sets_figures_and_says_it_is_user_supplied() -> None:
    cat = default_catalog()
    h100 = cat.chip("h100-sxm")
    u = derive_chip("H100:hbm_bandwidth*1.5, memory=141GB", cat)
    assert u.chip.hbm_bytes_per_s == pytest.approx(1.5 * h100.hbm_bytes_per_s)
    assert u.chip.hbm_capacity_bytes == 141e9
    assert u.chip.dense_flops_per_s == h100.dense_flops_per_s
    assert u.chip.user_supplied and u.chip.provenance.startswith(USER_SUPPLIED)
    assert u.chip.based_on == "h100-sxm" and u.chip.id.startswith("h100-sxm:")
    assert u.chip.figures["memory.bandwidth_bytes_per_s"].source == USER_SUPPLIED
    assert u.chip.figures["dense_flops_per_s.bf16"] == h100.figures["dense_flops_per_s.bf16"]
    # without price= it carries the base chip's prices, each saying so
    assert len(u.offers) == len(cat.offers_for("h100-sxm")) > 0
    assert all("price of the catalog h100-sxm" in o.note for o in u.offers)
    priced = derive_chip("h100-sxm:price=3.5", cat)
    assert [o.usd_per_chip_hour for o in priced.offers] == [3.5]
    assert USER_SUPPLIED in priced.offers[0].source


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("h100-sxm:hbm_bw*1.5", "valid fields: hbm_bandwidth, memory"),
        ("h100-sxm:memory=141", "more than 100x away"),  # bytes, not GB: a unit slip
        ("h100-sxm:hbm_bandwidth*1000", "outside [0.01, 100]"),
        ("h100-sxm:hbm_bandwidth*0", "positive"),
        ("h100-sxm:memory=lots", "not a number"),
        ("h100-sxm:memory=141GB,memory=192GB", "changes memory twice"),
        ("h100-sxm", "BASE:EDIT"),
        ("h100-sxm:price*2", "price is set, not scaled"),
        ("tpu-v5p:fp64_flops*2", "no fp64_flops to scale"),
    ],
)
def test_bad_derived_chip_is_one_clear_line(spec: str, says: str) -> None:
    with pytest.raises(HypotheticalChipError) as err:
        derive_chip(spec, default_catalog())
    assert says in str(err.value) and "\n" not in str(err.value)


def test_unknown_field_lists_every_valid_one() -> None:
    with pytest.raises(HypotheticalChipError) as err:
        derive_chip("h100-sxm:nope=1", default_catalog())
    assert all(name in str(err.value) for name in field_names())


def test_faster_hbm_speeds_up_decode_but_not_the_compute_bound_prefill() -> None:
    """Issue 16's check: 1.5x HBM bandwidth on an H100 gives a faster decode (TPOT) and the
    same prefill-bound TTFT: the prefill's compute time is unchanged and only its few
    memory-bound ops (norms, activations) gain."""
    cat = default_catalog()
    work = Workload(
        model=load_workload_model("llama3-8b"),
        phase=Inference(batch=1, input_len=4096, output_len=128),
    )
    base = predict(work, cat.chip("h100-sxm"), 1)
    fast = predict(work, derive_chip("h100-sxm:hbm_bandwidth*1.5", cat).chip, 1)
    assert isinstance(base, InferPrediction) and isinstance(fast, InferPrediction)
    assert fast.tpot_s < 0.9 * base.tpot_s
    assert base.prefill.compute_s > 5 * base.prefill.memory_s  # the prefill is compute-bound
    assert fast.prefill.compute_s == base.prefill.compute_s
    assert fast.ttft_s == pytest.approx(base.ttft_s, rel=0.05)


def test_chip_file_without_sources_loads_as_user_supplied() -> None:
    u = load_chip_file(MYCHIP)
    assert u.chip.id == "my-chip" and u.chip.hbm_bytes_per_s == 6e12
    assert u.chip.provenance == f"{USER_SUPPLIED}: mychip.toml"
    assert USER_SUPPLIED in u.chip.figures["memory.capacity_bytes"].source
    assert [o.usd_per_chip_hour for o in u.offers] == [5.0]
    cat = with_user_chips(default_catalog(), [u])
    assert cat.chip("my-chip") is u.chip and cat.offers_for("my-chip") == u.offers


def test_chip_file_reports_every_bad_field_on_one_line(tmp_path: Path) -> None:
    text = MYCHIP.read_text().replace('vendor = "nvidia"', 'vendor = "acme"')
    text = text.replace("bandwidth_bytes_per_s = 6e12\n", "")
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(HypotheticalChipError) as err:
        load_chip_file(bad)
    msg = str(err.value)
    assert "2 bad fields" in msg and "vendor" in msg and "'acme'" in msg
    assert "memory.bandwidth_bytes_per_s: Field required" in msg and "\n" not in msg


def test_chip_file_may_not_take_a_catalog_id(tmp_path: Path) -> None:
    clash = tmp_path / "clash.toml"
    clash.write_text(MYCHIP.read_text().replace('id = "my-chip"', 'id = "h100-sxm"'))
    with pytest.raises(HypotheticalChipError, match="already names h100-sxm"):
        with_user_chips(default_catalog(), [load_chip_file(clash)])
    with pytest.raises(HypotheticalChipError, match="does not exist"):
        load_chip_file(tmp_path / "missing.toml")


def test_predict_marks_a_derived_or_file_chip_as_user_supplied() -> None:
    args = ["predict", "llama3-8b", "--phase", "infer", "--json"]
    derived = runner.invoke(app, [*args, "--chip", "h100-sxm:hbm_bandwidth*1.5"])
    assert derived.exit_code == 0, derived.output
    assert json.loads(derived.output)["chip_provenance"].startswith(USER_SUPPLIED)
    filed = runner.invoke(app, [*args, "--chip-file", str(MYCHIP)])
    assert filed.exit_code == 0, filed.output
    assert json.loads(filed.output)["chip"] == "my-chip"
    both = runner.invoke(app, [*args, "--chip", "h100", "--chip-file", str(MYCHIP)])
    assert both.exit_code == 2 and "exactly one of --chip" in both.output


def test_advise_considers_a_chip_file_and_notes_it() -> None:
    result = runner.invoke(
        app,
        ["advise", "llama3-8b", "--chips", "h100", "--chip-file", str(MYCHIP), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert any("my-chip is user-supplied" in n for n in data["notes"])
    assert "my-chip" in json.dumps(data["options"])
