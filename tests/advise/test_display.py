"""Run lengths, energy and dollars read in the unit that suits them."""

from __future__ import annotations

import pytest

from chipwise.advise.display import format_energy, format_run_time, format_usd
from chipwise.units import SECONDS_PER_DAY


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (45, "45 s"),
        (14 * 60, "14 min"),
        (23.3 * 3600, "23.3 h"),
        (4.2 * SECONDS_PER_DAY, "4.2 d"),
        (180 * SECONDS_PER_DAY, "180 d"),
        (1234 * SECONDS_PER_DAY, "1,234 d"),
    ],
)
def test_run_time_picks_its_unit(seconds: float, text: str) -> None:
    assert format_run_time(seconds / SECONDS_PER_DAY) == text


@pytest.mark.parametrize(
    ("kwh", "text"),
    [
        (0.85, "850 Wh"),
        (3.5, "3.50 kWh"),
        (35.0, "35.0 kWh"),
        (1234.0, "1.23 MWh"),
        (23.2e6, "23.2 GWh"),
    ],
)
def test_energy_picks_its_unit(kwh: float, text: str) -> None:
    assert format_energy(kwh) == text


@pytest.mark.parametrize(
    ("usd", "text"),
    [(53.2, "$53"), (12_345, "$12,345"), (129_314_031, "$129M"), (1.29e9, "$1.29B")],
)
def test_dollars_pick_their_unit(usd: float, text: str) -> None:
    assert format_usd(usd) == text


def test_a_small_run_never_reads_as_zero() -> None:
    assert format_run_time(0.001) != "0.00 d" and not format_run_time(0.001).startswith("0")
    assert not format_energy(0.5).startswith("0")
