"""Short, human numbers for the advisor's reasons and tables: run lengths, energy, dollars.

A run of minutes must not read "0.00 days" and a 35 kWh fine-tune must not read "0.0 MWh":
each value picks the unit that gives it one to three leading digits.
"""

from __future__ import annotations

from chipwise.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

_MINUTE_S = 60.0


def format_run_time(days: float) -> str:
    """A run's wall clock: ``'45 s'``, ``'14 min'``, ``'23.3 h'``, ``'4.2 d'``, ``'180 d'``."""
    seconds = days * SECONDS_PER_DAY
    if seconds < 2 * _MINUTE_S:
        return f"{seconds:.0f} s"
    if seconds < 2 * SECONDS_PER_HOUR:
        return f"{seconds / _MINUTE_S:.0f} min"
    if seconds < 2 * SECONDS_PER_DAY:
        return f"{seconds / SECONDS_PER_HOUR:.1f} h"
    if days < 100:
        return f"{days:.1f} d"
    return f"{days:,.0f} d"


def format_energy(kwh: float) -> str:
    """Energy in Wh, kWh, MWh or GWh: ``'850 Wh'``, ``'35 kWh'``, ``'1.2 MWh'``, ``'3.4 GWh'``."""
    for factor, unit in ((1e6, "GWh"), (1e3, "MWh"), (1.0, "kWh")):
        if kwh >= factor:
            return _digits(kwh / factor) + f" {unit}"
    return _digits(kwh * 1e3) + " Wh"


def format_usd(usd: float) -> str:
    """Dollars, whole below a million, then millions or billions: ``'$53'``, ``'$12,345'``,
    ``'$129M'``, ``'$1.29B'``."""
    if usd >= 1e9:
        return f"${_digits(usd / 1e9)}B"
    if usd >= 1e6:
        return f"${_digits(usd / 1e6)}M"
    return f"${usd:,.0f}"


def _digits(value: float) -> str:
    """Three significant figures at most, no exponent: 1.23, 12.3, 123, 1,234."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
