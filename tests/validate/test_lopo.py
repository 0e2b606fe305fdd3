"""In-sample rows are named as data, and training rows are scored leave-one-publication-out."""

from __future__ import annotations

import pytest

from chipwise.validate import (
    ALL_ROWS,
    Report,
    SustainedFit,
    in_sample_constants,
    in_sample_of,
    load_cases,
    load_confidence,
    publication,
    score_groups,
)

CASES = load_cases()
IDS = {c.id for c in CASES}


def test_every_in_sample_row_is_a_validation_row_and_names_its_constant() -> None:
    constants = in_sample_constants()
    assert constants
    for c in constants:
        assert c.rows and set(c.rows) <= IDS, c
        assert c.how.startswith(("read off", "fitted"))
    # the microbenchmark rows efficiency constants were read off (issue 10)
    read_off = {r for c in constants if c.how.startswith("read off") for r in c.rows}
    # ... and the serving rows each engine's HTTP-server latency was read off (API_REQUEST_S)
    api = {"GPS-284", "GPS-287", "GPS-302", "GPS-305", "GPS-308", "GPS-281", "GPS-026", "GPS-036",
           "GPS-058", "GPS-068", "GPS-382", "GPS-425"}  # fmt: skip
    # ... re-read with InferenceMAX gpt-oss-120b's 1-8-client B200 vLLM / TensorRT-LLM rows
    api |= {f"IMX-{n:03d}" for n in (3, 9, 15, 21, 27, 33, 39, 45, 51, 57, 60, 63, 66, 69,
            81, 87, 93, 117, 123, 129, 141, 144, 147, 153, 156)}  # fmt: skip
    assert "IMX-195" not in read_off  # the same runs' H100 rows stay out of sample
    assert read_off == {"GPU-061", "GPU-062", "GPU-065", "GPU-070", "GPU-072", "TPU-049"} | api
    assert "hbm_fraction (architecture.hopper)" in in_sample_of("GPU-070")
    assert in_sample_of("GPU-073") == ()  # NCCL all-reduce: no constant read off it


def test_the_sustained_fraction_is_in_sample_for_the_rows_it_was_fitted_to() -> None:
    fitted = {r for c in in_sample_constants() if c.name == "sustained_tensor_fraction"
              for r in c.rows}  # fmt: skip
    train = {c.id for c in CASES if c.phase == "train" and c.usable}
    assert fitted <= train and len(fitted) >= 100


@pytest.fixture(scope="module")
def report(validation_report: Report) -> Report:
    return validation_report  # every row, predicted once per session (tests/conftest.py)


def test_summary_scores_out_of_sample_rows_first_and_every_row_as_shipped(report: Report) -> None:
    table = load_confidence()
    scores = {s.group: s for s in score_groups(report, table.lopo_results(report))}
    micro = scores["microbench"]
    assert micro.as_shipped is not None and micro.out_of_sample is not None
    assert micro.in_sample_rows == 6
    assert micro.out_of_sample.rows == micro.as_shipped.rows - micro.in_sample_rows
    train = scores["train"]
    assert train.out_of_sample is not None and train.as_shipped is not None
    assert train.out_of_sample.rows == train.as_shipped.rows  # every row, held out
    assert {"train-gpu", "train-tpu", "train-1024+"} <= scores.keys()


@pytest.mark.slow
def test_one_publication_left_out_matches_the_shipped_table() -> None:
    """Refit without the smallest publication: the value and its rows' predictions are the
    ones the shipped table holds (the whole run is benchmarks/validate.py's)."""
    table = load_confidence()
    fitter = SustainedFit(CASES)
    pubs = {publication(c) for c in fitter.cases}
    pub = min(pubs, key=lambda p: sum(publication(c) == p for c in fitter.cases))
    rest = [c for c in fitter.cases if publication(c) != pub]
    values = fitter.fit(rest)
    assert values == table.lopo_fits[pub]
    for c in fitter.cases:
        if publication(c) == pub:
            r = fitter.predict(c, values[fitter.group_of(c)])
            assert r.predicted == pytest.approx(table.lopo_predicted[c.id], rel=1e-9)
    assert set(table.lopo_fits) == pubs | {ALL_ROWS}
