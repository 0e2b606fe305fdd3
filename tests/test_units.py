"""Unit formatting: SI prefixes, and a value that rounds up takes the next prefix."""

from __future__ import annotations

import pytest

from chipwise.units import format_bytes, format_count


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (7.0e9, "7 G"),
        (999_751_680, "1 G"),  # Gemma 3 1B: not '1e+03 M'
        (999_000_000, "999 M"),
        (596e6, "596 M"),
        (1.026e12, "1.03 T"),
        (12.0, "12"),
    ],
)
def test_format_count(value: float, text: str) -> None:
    assert format_count(value) == text


def test_format_bytes_rounds_up_to_the_next_prefix() -> None:
    assert format_bytes(80e9) == "80 GB"
    assert format_bytes(999.9e9) == "1 TB"
