"""Fixtures for the cost tests."""

from __future__ import annotations

import pytest

from chipwise.cost.assumptions import Assumptions, default_assumptions


@pytest.fixture
def simple_assumptions() -> Assumptions:
    """Round numbers so hand-computed expectations stay readable."""
    return default_assumptions().override(
        usd_per_kwh=0.10,
        grid_kg_co2e_per_kwh=0.5,
        pue_cloud=1.2,
        pue_owned=1.2,
        idle_fraction_gpu=0.1,
        idle_fraction_tpu=0.5,
        host_power_factor_gpu=1.5,
        host_power_factor_tpu=1.5,
        mfu_at_full_power=0.75,
        amortisation_years=4.0,
        hosting_fraction_of_chip_price=0.6,
        network_fraction_of_chip_price=0.2,
        ops_usd_per_chip_hour=0.0,
        owned_duty_cycle=0.5,
    )
