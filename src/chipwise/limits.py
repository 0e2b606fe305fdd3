"""Physical bounds on every number a user can give chipwise (CLI option, config.json key,
``--plan`` value, primitive shape, web field).

Each entry point checks its numbers against these bounds where it parses them, so nothing
absurd reaches the models and the work of one request is bounded by construction (a loop
over layers, a divisor search over a batch, a walk over chip counts). The bounds sit far
above any real model or job, so no real input is refused; each says what it is measured
against.

``check_whole`` and ``check_number`` give the one-line message the CLI prints and the web
API returns: the bad value, the range, and the fix.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from chipwise.errors import ChipwiseError

# --- model shapes (config.json keys, web uploads) ---------------------------------------------
# Deepest published decoders: 126 layers (Llama 3.1 405B), 128 (Megatron 1T); 1000 is 8x that.
MAX_LAYERS = 1000
# Widest published models: d_model 18432 (PaLM 540B), 25600 (Megatron 1T); 1e6 is 40x that.
MAX_WIDTH = 1_000_000
# MLP widths reach 73728 (PaLM 540B: 4 x 18432); 1e7 is 100x that.
MAX_FFN_WIDTH = 10_000_000
# Attention heads: 128 (Llama 3.1 405B, DeepSeek-V3); head dim: 256 (Gemma 2).
MAX_HEADS = 65_536
MAX_HEAD_DIM = 65_536
# Vocabularies reach 262144 (Gemma 3); 1e8 is 400x that.
MAX_VOCAB = 100_000_000
# Routed experts: 384 (Kimi K2); 65536 is 170x that.
MAX_EXPERTS = 65_536
# Context windows reach 1e7 tokens (Llama 4 Scout); 1e9 is 100x that.
MAX_POSITIONS = 1_000_000_000
# Parameter counts: ~2e12 for the largest published MoE models; 1e15 is 500x that.
MAX_PARAMS = 1e15

# --- config files ---------------------------------------------------------------------------
# Hugging Face config.json files are a few KiB; those with big label maps stay under 1 MiB.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
# Real configs nest 3-4 levels (text_config.rope_scaling, quantization_config.*).
MAX_JSON_DEPTH = 32

# Quantised checkpoints' exclude lists (quantization_config exclude_modules / ignore) name at
# most a few hundred modules (one per layer and projection); 10000 patterns is 20x that.
MAX_EXCLUDE_PATTERNS = 10_000
# Their compressed-tensors ``re:`` patterns run on Python's backtracking ``re`` against every
# layer's attention module names (~50 characters): each may repeat at most twice
# (".*self_attn.*": ~4 us a name; a third repeat ~70 us, four ~1 ms, a repeated group
# "(.*)*x" exponential), and the patterns x names checked stay under 200000 (~1 s).
MAX_EXCLUDE_REGEX_REPEATS = 2
MAX_EXCLUDE_REGEX_CHECKS = 200_000

# --- the job --------------------------------------------------------------------------------
# The largest announced clusters hold ~2e5 accelerators (xAI Colossus, 2024); 2^20 (~1e6) is
# 5x that.
MAX_CHIPS = 1 << 20
# Training batches: 4M-16M tokens per step (Llama 3 405B: 16M) = 4096 sequences of 4096;
# 1e8 sequences is 25000x that, and the planner's divisor search stays under a second.
MAX_GLOBAL_BATCH = 100_000_000
# Tokens per sequence (train) or per prompt/answer (serve): 2^24 (~1.7e7) is above every
# published context window (1e7, Llama 4 Scout).
MAX_SEQ_LEN = 1 << 24
# Concurrent serving requests on one deployment: 2^20.
MAX_SERVE_BATCH = 1 << 20
# Serving arrival rate: the largest public services peak near 1e6 requests/s; 1e7 is 10x.
MAX_RPS = 1e7
# A latency target (TTFT, TPOT): one hour in ms is beyond any interactive service.
MAX_LATENCY_MS = 3_600_000.0
# Timed steps of one 'chipwise profile' run: a median needs a handful; 10000 is plenty.
MAX_PROFILE_STEPS = 10_000
# Worker processes one machine runs: 1024 is above any host's core count.
MAX_WORKERS = 1024
# Training tokens: 36T (Qwen 3, 2025) is the largest published; 1e16 is ~300x that.
MAX_TOKENS = 1e16
# Tokens per optimizer step (--batch-tokens): 16M (Llama 3 405B) is the largest published;
# 1e12 is 60000x that.
MAX_BATCH_TOKENS = 1e12
# Serving load: the largest public services answer ~1e9-1e10 requests a day; 1e12 is 100x.
MAX_REQUESTS_PER_DAY = 1e12
# Money and time a request may state: USD 1e13 (~ world GDP / 10), 100 years.
MAX_USD = 1e13
MAX_DAYS = 36_525.0

# --- primitives (microbenchmarks) -------------------------------------------------------------
# A matmul dimension: 2^22 (~4e6); a 4e6 x 4e6 bf16 operand is 32 TB, already beyond any chip.
MAX_MATMUL_DIM = 1 << 22
# Bytes one primitive touches: 1e13 (10 TB) is 35x the largest chip memory (MI355X 288 GB).
MAX_PRIMITIVE_BYTES = 1e13

# A file a user names (a chip, prices, a length histogram, a grid): real ones are a few KiB;
# 16 MiB bounds the memory and the parse of a wrong or hostile one (/dev/zero, a disk image).
MAX_USER_FILE_BYTES = 16 * 1024 * 1024

# Longest number text we parse (a quantity like '15T', a --plan value): real ones are short.
MAX_NUMBER_CHARS = 64


class LimitError(ChipwiseError):
    """A number outside the physical range chipwise accepts."""


def check_whole(
    what: str,
    value: object,
    *,
    low: int,
    high: int,
    fix: str = "",
    error: type[ChipwiseError] = LimitError,
) -> int:
    """``value`` as an int in ``low..high``, or ``error`` naming it and the range.

    Accepts an int or a whole, finite float (``32.0``); refuses bools, strings, NaN.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(f"{what} must be a whole number, not {_shown(value)}{_fix(fix)}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise error(f"{what} must be a whole number, not {_shown(value)}{_fix(fix)}")
    number = int(value)
    if not low <= number <= high:
        raise error(f"{what} is {_shown(value)}; it must be in {low}..{high:,}{_fix(fix)}")
    return number


def check_number(
    what: str,
    value: float,
    *,
    high: float,
    low: float = 0.0,
    fix: str = "",
    error: type[ChipwiseError] = LimitError,
) -> float:
    """``value`` if finite and in ``(low, high]``, else ``error`` naming it and the range."""
    if low == 0 and math.isfinite(value) and value <= 0:
        raise error(f"{what} must be a positive number, got {value:g}{_fix(fix)}")
    if not math.isfinite(value) or not low < value <= high:
        raise error(
            f"{what} is {_shown(value)}; it must be a finite number above {low:g} and at most "
            f"{high:g}{_fix(fix)}"
        )
    return value


# Memo tables whose keys come from user input (a config.json's shapes, a prompt length, a
# workload path) keep at most this many entries: a long-running web server's memory stays
# flat however many distinct requests it answers (a serving search fills a few thousand).
CACHE_ENTRIES = 65_536

# Non-ML --work (fp64 FLOPs, bytes, pixels): a year of a 1 EFLOP/s machine is ~3e25 FLOPs;
# 1e24 is far past any job one would advise on, and every default (1e18) is well inside it.
MAX_WORK = 1e24

# The bound of each quantity option (a count such as 15T), by the name the user typed.
QUANTITY_BOUNDS: dict[str, float] = {
    "tokens": MAX_TOKENS,
    "batch-tokens": MAX_BATCH_TOKENS,
    "batch_tokens": MAX_BATCH_TOKENS,
    "requests-per-day": MAX_REQUESTS_PER_DAY,
    "requests_per_day": MAX_REQUESTS_PER_DAY,
    "work": MAX_WORK,
}


def check_quantity(option: str, value: float, *, error: type[ChipwiseError] = LimitError) -> float:
    """A parsed quantity option (``--tokens``, ``requests_per_day``...) checked as positive,
    finite and within its bound, where it is parsed."""
    high = QUANTITY_BOUNDS.get(option.lstrip("-"), MAX_TOKENS)
    return check_number(option, value, high=high, error=error)


def read_user_file(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: type[ChipwiseError] = LimitError,
    max_bytes: int = MAX_USER_FILE_BYTES,
) -> bytes:
    """The bytes of a regular file a user named, at most ``max_bytes``.

    Opened non-blocking and checked with ``fstat`` before any read, so a FIFO, a device
    (``/dev/zero``) or a socket is refused at once instead of blocking or filling memory.

    Raises:
        FileNotFoundError, OSError: as ``open`` does (callers word their own message).
        error: not a regular file, or larger than ``max_bytes``.
    """
    where = Path(path)
    fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
            raise error(f"{what} {where} is {kind}, not a file; give a regular file")
        if info.st_size > max_bytes:
            raise error(_user_file_too_big(what, where, info.st_size, max_bytes))
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise error(_user_file_too_big(what, where, size, max_bytes))
    return b"".join(chunks)


def _user_file_too_big(what: str, path: Path, n_bytes: int, max_bytes: int) -> str:
    return (
        f"{what} {path} is {n_bytes:,}+ bytes; the limit is {max_bytes // (1024 * 1024)} MiB "
        "(real ones are a few KiB)"
    )


def json_too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests objects/arrays more than ``limit`` levels (iteratively, so a
    hostile document cannot exhaust the stack here)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def json_all_finite(value: object) -> bool:
    """Whether every float in parsed JSON is finite (Python's json reads NaN and Infinity)."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _shown(value: object) -> str:
    text = f"{value:g}" if isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fix(fix: str) -> str:
    return f"; {fix}" if fix else ""
