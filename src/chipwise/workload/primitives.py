"""Microbenchmark primitives: ``matmul:MxNxK[:dtype]``, ``copy:BYTES``, ``allreduce:BYTES``.

BYTES is a whole number of bytes: ``8589934592``, ``8e9``, ``8Gi`` (binary: Ki, Mi, Gi, Ti,
optionally followed by B) or ``8G`` / ``8GB`` (decimal: k, M, G, T, P). A matmul multiplies
(M x K) by (K x N) in ``dtype`` (default bf16).

What each one moves, as the validation data counts it: ``copy:B`` reads B bytes and
writes B bytes (BabelStream's and benchmark_hbm.py's 2 x size / time); ``allreduce:B``
reduces a B-byte buffer across the chips (bus bandwidth as nccl-tests defines it).
"""

from __future__ import annotations

import math
import re

from chipwise.errors import WorkloadError
from chipwise.limits import MAX_MATMUL_DIM, MAX_NUMBER_CHARS, MAX_PRIMITIVE_BYTES
from chipwise.units import DTYPE_BYTES, GIGA, KILO, MEGA, PETA, TERA, GiB, KiB, MiB
from chipwise.workload.ir import Graph, Op, OpKind, Primitive

PRIMITIVE_KINDS = ("matmul", "copy", "allreduce")
SYNTAX = "matmul:MxNxK[:dtype] (e.g. matmul:8192x8192x8192:bf16), copy:BYTES or allreduce:BYTES"

_BYTE_SUFFIXES: dict[str, float] = {
    "": 1.0,
    "b": 1.0,
    "k": KILO,
    "kb": KILO,
    "m": MEGA,
    "mb": MEGA,
    "g": GIGA,
    "gb": GIGA,
    "t": TERA,
    "tb": TERA,
    "p": PETA,
    "pb": PETA,
    "ki": KiB,
    "kib": KiB,
    "mi": MiB,
    "mib": MiB,
    "gi": GiB,
    "gib": GiB,
    "ti": 1024.0**4,
    "tib": 1024.0**4,
}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_MNK = re.compile(r"^([0-9]+)x([0-9]+)x([0-9]+)$", re.IGNORECASE)


def is_primitive_spec(text: str) -> bool:
    """Whether ``text`` starts like a primitive (``matmul:``, ``copy:``, ``allreduce:``)."""
    head, sep, _ = text.strip().partition(":")
    return bool(sep) and head.lower() in PRIMITIVE_KINDS


def parse_bytes(text: str) -> float:
    """``'8Gi'`` -> 8589934592, ``'8e9'`` -> 8e9; a positive whole number of bytes."""
    found = _NUMBER.match(text) if len(text) <= MAX_NUMBER_CHARS else None
    suffix = found[2].lower() if found else ""
    if not found or suffix not in _BYTE_SUFFIXES:
        raise WorkloadError(
            f"bad byte count {text!r}; write e.g. 8589934592, 8e9, 8Gi or 8GB ({SYNTAX})"
        )
    value = float(found[1]) * _BYTE_SUFFIXES[suffix]
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise WorkloadError(
            f"byte count {text!r} must be a positive whole number of bytes ({SYNTAX})"
        )
    if value > MAX_PRIMITIVE_BYTES:
        raise WorkloadError(
            f"byte count {text!r} is over {MAX_PRIMITIVE_BYTES:g} bytes (10 TB, beyond any "
            f"chip's memory); give a size a chip can hold, e.g. 8Gi ({SYNTAX})"
        )
    return value


def parse_primitive(text: str) -> Primitive:
    """Parse ``matmul:MxNxK[:dtype]``, ``copy:BYTES`` or ``allreduce:BYTES``.

    Raises:
        WorkloadError: naming the bad part and the expected syntax.
    """
    parts = text.strip().split(":")
    kind = parts[0].lower()
    if kind not in PRIMITIVE_KINDS:
        raise WorkloadError(f"unknown primitive {text!r}; expected {SYNTAX}")
    if kind == "matmul":
        if len(parts) not in (2, 3):
            raise WorkloadError(f"bad matmul {text!r}; expected {SYNTAX}")
        shape = _MNK.match(parts[1].strip())
        if not shape:
            raise WorkloadError(f"bad matmul shape {parts[1]!r} in {text!r}; expected {SYNTAX}")
        if any(len(g) > MAX_NUMBER_CHARS for g in shape.groups()):
            raise WorkloadError(f"matmul dims too long in {text[:80]!r}; expected {SYNTAX}")
        m, n, k = (int(g) for g in shape.groups())
        if min(m, n, k) < 1:
            raise WorkloadError(f"matmul dims must be positive in {text!r}; expected {SYNTAX}")
        if max(m, n, k) > MAX_MATMUL_DIM:
            raise WorkloadError(
                f"matmul dim {max(m, n, k):,} in {text[:80]!r} is over {MAX_MATMUL_DIM:,} (its "
                f"operands would outgrow any chip's memory); expected {SYNTAX}"
            )
        dtype = parts[2].strip().lower() if len(parts) == 3 else "bf16"
        if dtype not in DTYPE_BYTES:
            raise WorkloadError(
                f"unknown dtype {dtype[:16]!r} in {text[:80]!r}; use one of "
                f"{', '.join(DTYPE_BYTES)} ({SYNTAX})"
            )
        operand_bytes = (m * k + k * n + m * n) * DTYPE_BYTES[dtype]
        if operand_bytes > MAX_PRIMITIVE_BYTES:
            raise WorkloadError(
                f"matmul {m}x{n}x{k} moves {operand_bytes:.3g} bytes, over "
                f"{MAX_PRIMITIVE_BYTES:g} (10 TB, beyond any chip's memory); give a smaller "
                f"shape ({SYNTAX})"
            )
        return Primitive(kind="matmul", mnk=(m, n, k), dtype=dtype)
    if len(parts) != 2:
        raise WorkloadError(f"bad {kind} {text!r}; expected {SYNTAX}")
    return Primitive(kind=kind, n_bytes=parse_bytes(parts[1]))


def primitive_graph(primitive: Primitive) -> Graph:
    """A one-op ``Graph`` of the primitive, for the per-op performance model."""
    if primitive.kind == "matmul":
        m, n, k = primitive.mnk
        size = DTYPE_BYTES[primitive.dtype]
        op = Op(
            name=primitive.name,
            kind=OpKind.MATMUL,
            dtype=primitive.dtype,
            flops=2.0 * m * n * k,
            bytes_read=(m * k + k * n) * size,
            bytes_written=m * n * size,
            shape=(m, n),
            mnk=(m, n, k),
        )
    elif primitive.kind == "copy":
        op = Op(
            name=primitive.name,
            kind=OpKind.COPY,
            dtype=primitive.dtype,
            bytes_read=primitive.n_bytes,
            bytes_written=primitive.n_bytes,
        )
    elif primitive.kind == "allreduce":
        # Bytes are the buffer each chip holds; the traffic between chips depends on the
        # chip count and algorithm, which the collective model supplies.
        op = Op(
            name=primitive.name,
            kind=OpKind.COLLECTIVE,
            dtype=primitive.dtype,
            bytes_read=primitive.n_bytes,
            bytes_written=primitive.n_bytes,
        )
    else:
        raise WorkloadError(f"unknown primitive kind {primitive.kind!r}; expected {SYNTAX}")
    return Graph(name=primitive.name, ops=(op,), source="primitive")
