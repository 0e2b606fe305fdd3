"""Unit constants and formatting. Nobody else writes ``1e12``.

Decimal prefixes (kilo = 1000) are used for rates and vendor capacities (HBM "80 GB" is
80e9 bytes on datasheets); binary prefixes (KiB = 1024) only where a source states them.
"""

from __future__ import annotations

import math

KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15

KB = KILO
MB = MEGA
GB = GIGA
TB = TERA
KiB = 1024.0
MiB = 1024.0**2
GiB = 1024.0**3

BITS_PER_BYTE = 8
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
HOURS_PER_YEAR = 8766.0  # 365.25 days

# Bytes per element of each dtype chipwise knows. fp8/int8 are one byte.
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    # 4-bit formats store a scale per block of values beside the values, and every read of
    # the weights reads the scales too. int4 is AWQ/GPTQ's default group of 128 with an fp16
    # scale and a 4-bit zero point (AutoAWQ / GPTQModel q_group_size 128): 4 + 20/128 bits.
    # fp4 is NVFP4 (16-element blocks, one fp8 E4M3 scale: 4.5 bits; NVIDIA "Introducing
    # NVFP4", 2025-06), the format of TensorRT-LLM's and ModelOpt's fp4 checkpoints; MXFP4
    # (OCP MX v1.0: 32-element blocks, an 8-bit E8M0 scale) stores 4.25, 6 % less.
    "int4": 0.5 + 2.5 / 128,
    "fp4": 0.5 + 1.0 / 16,
    "mxfp4": 0.5 + 1.0 / 32,  # a checkpoint's own format (TransformerSpec.expert_quant)
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype``; raises ``KeyError`` for an unknown name."""
    return DTYPE_BYTES[dtype]


def _scaled(value: float, steps: tuple[tuple[float, str], ...], unit: str, digits: int) -> str:
    # a value that rounds up to the next prefix takes it: 999.75e6 is '1 G', not '1e+03 M'
    rounds_up = 1 - 0.5 * 10.0**-digits
    for factor, prefix in steps:
        if abs(value) >= factor * rounds_up:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


_DECIMAL = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"))


def format_bytes(n_bytes: float, digits: int = 3) -> str:
    """``80e9`` -> ``'80 GB'`` (decimal prefixes, as datasheets use)."""
    return _scaled(n_bytes, _DECIMAL, "B", digits)


def format_rate(per_s: float, unit: str = "FLOP/s", digits: int = 3) -> str:
    """``989e12`` -> ``'989 TFLOP/s'``."""
    return _scaled(per_s, _DECIMAL, unit, digits)


def format_count(n: float, digits: int = 3) -> str:
    """``7.0e9`` -> ``'7 G'``; used for parameter and token counts."""
    return _scaled(n, _DECIMAL, "", digits).strip()


def format_seconds(seconds: float) -> str:
    """Human duration: ``0.0012`` -> ``'1.2 ms'``, ``90000`` -> ``'1.04 d'``."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * SECONDS_PER_DAY:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / SECONDS_PER_DAY:.3g} d"


def parse_quantity(text: str) -> float:
    """Parse ``'15T'``, ``'2.5e12'``, ``'300B'``, ``'8Gi'`` into a number.

    Suffixes: k, M, G|B (billion), T, P decimal; Ki, Mi, Gi, Ti binary.

    Raises:
        ValueError: not a number, longer than 64 characters, or not finite (``nan``,
            ``inf``, ``1e999``); callers turn it into a one-line error naming the option.
    """
    s = text.strip().replace("_", "").replace(",", "")
    if len(s) > _MAX_QUANTITY_CHARS:
        raise ValueError(f"quantity of {len(s)} characters")
    suffixes = {
        "Ki": KiB, "Mi": MiB, "Gi": GiB, "Ti": 1024.0**4,
        "k": KILO, "K": KILO, "M": MEGA, "G": GIGA, "B": GIGA, "T": TERA, "P": PETA,
    }  # fmt: skip
    value = None
    for suffix in sorted(suffixes, key=len, reverse=True):
        if s.endswith(suffix):
            value = float(s[: -len(suffix)]) * suffixes[suffix]
            break
    if value is None:
        value = float(s)
    if not math.isfinite(value):
        raise ValueError(f"quantity {s!r} is not finite")
    return value


# A quantity such as '15T' or '2.5e12' is a few characters; a longer string is not one.
_MAX_QUANTITY_CHARS = 64
