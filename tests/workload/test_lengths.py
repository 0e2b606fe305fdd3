"""Length histograms (``--lengths`` files and the validation rows' length profiles)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload.lengths import mean_lengths, read_lengths


def test_a_histogram_reads_with_or_without_counts(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_text("input_len,output_len,count\n100,10,3\n300,30,1\n")
    rows = read_lengths(f)
    assert rows == ((100, 10, 3.0), (300, 30, 1.0))
    assert mean_lengths(rows) == (pytest.approx(150.0), pytest.approx(15.0))
    f.write_text("input_len,output_len\n100,10\n300,30\n")
    assert mean_lengths(read_lengths(f)) == (pytest.approx(200.0), pytest.approx(20.0))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("input_len,output_len\n", "no rows"),
        ("in,out\n1,2\n", "need columns"),
        ("input_len,output_len\nx,2\n", "need columns"),
    ],
)
def test_a_bad_histogram_names_the_file_and_the_fix(tmp_path: Path, text: str, match: str) -> None:
    f = tmp_path / "h.csv"
    f.write_text(text)
    with pytest.raises(WorkloadError, match=match):
        read_lengths(f, what="ROW-1 lengths")
    with pytest.raises(WorkloadError, match="ROW-1 lengths"):
        read_lengths(tmp_path / "absent.csv", what="ROW-1 lengths")


def test_an_empty_histogram_has_no_mean() -> None:
    with pytest.raises(WorkloadError, match="positive total"):
        mean_lengths(())


def _packaged(name: str) -> Path:
    return Path(str(resources.files("chipwise.validate").joinpath("data", "lengths", name)))


@pytest.mark.parametrize(
    ("name", "samples", "mean_in", "mean_out", "max_in"),
    [
        # the figures lengths/README.md states for each profile
        ("mlperf-llama2-70b-openorca.csv", 24_576, 222.33, 294.0, 1021),
        ("mlperf-mixtral-8x7b.csv", 15_000, 427.40, 144.82, 1948),
        ("mlperf-llama3.1-405b.csv", 8_313, 9428.62, 684.69, 19_988),
        ("mlperf-deepseek-r1.csv", 4_388, 803.84, 4043.43, 3140),
    ],
)
def test_the_packaged_dataset_profiles_match_their_stated_figures(
    name: str, samples: int, mean_in: float, mean_out: float, max_in: int
) -> None:
    rows = read_lengths(_packaged(name))
    assert sum(c for _, _, c in rows) == samples
    assert mean_lengths(rows) == (
        pytest.approx(mean_in, abs=0.01),
        pytest.approx(mean_out, abs=0.01),
    )
    assert max(i for i, _, _ in rows) <= max_in
