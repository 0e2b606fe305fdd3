"""The ``--dataset-name random`` length histograms (``benchmarks/random_lengths.py``) that the
InferenceMAX rows name: the shipped files are what the generator writes, and they hold the
benchmark client's uniform draw (``np.random.randint(int(L * R), L + 1)`` per axis)."""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from chipwise.workload.lengths import mean_lengths, read_lengths

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "random_lengths.py"
SHIPPED = ((1024, 1024), (1024, 8192), (8192, 1024))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("random_lengths", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_axis_is_the_clients_integer_range_in_sixteen_equal_bins() -> None:
    gen = _generator()
    bins = gen.axis_bins(1024, 0.8)
    # int(1024 * 0.8) = 819 .. 1024: 206 integers, 16 bins of 12-13
    assert len(bins) == 16
    assert sum(c for _, c in bins) == 206
    assert {c for _, c in bins} == {12, 13}
    assert bins[0] == (825, 13)  # 819..831
    assert bins[-1] == (1019, 12)  # 1013..1024
    # a range narrower than 16 integers keeps one bin per integer
    assert gen.axis_bins(10, 0.5) == [(v, 1) for v in range(5, 11)]
    with pytest.raises(ValueError, match="range ratio"):
        gen.axis_bins(1024, 1.5)
    with pytest.raises(ValueError, match="length"):
        gen.axis_bins(0, 0.8)


def test_the_histogram_counts_every_integer_pair_once_at_the_uniform_means() -> None:
    gen = _generator()
    rows = gen.histogram(8192, 1024, 0.8)
    assert len(rows) == 256
    assert sum(c for *_, c in rows) == (8192 - 6553 + 1) * 206
    mean_in, mean_out = mean_lengths(tuple((i, o, float(c)) for i, o, c in rows))
    assert mean_in == pytest.approx((6553 + 8192) / 2, abs=0.5)
    assert mean_out == pytest.approx((819 + 1024) / 2, abs=0.5)
    assert gen.file_name(8192, 1024, 0.8) == "inferencemax-random-8192-1024-r0.8.csv"


@pytest.mark.parametrize(("isl", "osl"), SHIPPED)
def test_the_shipped_files_are_what_the_generator_writes(isl: int, osl: int) -> None:
    gen = _generator()
    name = gen.file_name(isl, osl, 0.8)
    shipped = read_lengths(
        Path(str(resources.files("chipwise.validate").joinpath("data", "lengths", name)))
    )
    assert shipped == tuple((i, o, float(c)) for i, o, c in gen.histogram(isl, osl, 0.8))
