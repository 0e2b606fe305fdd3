"""Microbenchmark primitive specs: matmul:MxNxK[:dtype], copy:BYTES, allreduce:BYTES."""

from __future__ import annotations

import pytest

from chipwise.errors import WorkloadError
from chipwise.workload.ir import OpKind, Primitive
from chipwise.workload.primitives import parse_bytes, parse_primitive, primitive_graph


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("matmul:8192x8192x8192", Primitive(kind="matmul", mnk=(8192, 8192, 8192))),
        ("matmul:2048x2048x13312:bf16", Primitive(kind="matmul", mnk=(2048, 2048, 13312))),
        ("MATMUL:1x2x3:FP8", Primitive(kind="matmul", mnk=(1, 2, 3), dtype="fp8")),
        ("copy:33554432", Primitive(kind="copy", n_bytes=33554432)),
        ("allreduce:8589934592", Primitive(kind="allreduce", n_bytes=8589934592)),
        ("allreduce:8Gi", Primitive(kind="allreduce", n_bytes=8589934592)),
        ("copy:8e9", Primitive(kind="copy", n_bytes=8e9)),
        ("copy:8GB", Primitive(kind="copy", n_bytes=8e9)),
        ("copy:1.5KiB", Primitive(kind="copy", n_bytes=1536)),
    ],
)
def test_valid_specs_parse(text: str, expected: Primitive) -> None:
    assert parse_primitive(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("matmul:8192x8192", "bad matmul shape"),
        ("matmul:0x8x8", "must be positive"),
        ("matmul:8x8x8:fp7", "unknown dtype 'fp7'"),
        ("matmul:8x8x8:bf16:extra", "bad matmul"),
        ("copy:", "bad byte count"),
        ("copy:lots", "bad byte count"),
        ("copy:8Qi", "bad byte count"),
        ("copy:0.5", "whole number of bytes"),
        ("allreduce:8Gi:fp32", "bad allreduce"),
        ("gather:8Gi", "unknown primitive"),
    ],
)
def test_bad_specs_name_the_expected_syntax(text: str, fragment: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_primitive(text)
    assert fragment in str(err.value)
    assert "matmul:MxNxK" in str(err.value)  # every error shows the syntax


def test_names_round_trip() -> None:
    for text in ("matmul:4096x1024x512:fp8", "copy:1024", "allreduce:606076928"):
        assert parse_primitive(parse_primitive(text).name) == parse_primitive(text)


def test_matmul_graph_counts_flops_and_bytes() -> None:
    graph = primitive_graph(parse_primitive("matmul:4096x2048x1024:bf16"))
    (op,) = graph.ops
    assert op.kind is OpKind.MATMUL and op.mnk == (4096, 2048, 1024)
    assert op.flops == 2 * 4096 * 2048 * 1024
    assert op.bytes_read == (4096 * 1024 + 1024 * 2048) * 2
    assert op.bytes_written == 4096 * 2048 * 2
    assert graph.tensor_flops_share == 1.0


def test_copy_reads_and_writes_the_buffer_once() -> None:
    (op,) = primitive_graph(parse_primitive("copy:8Gi")).ops
    assert op.kind is OpKind.COPY and op.flops == 0
    assert op.bytes_read == op.bytes_written == 8 * 1024**3


def test_allreduce_is_a_collective() -> None:
    (op,) = primitive_graph(parse_primitive("allreduce:1Mi")).ops
    assert op.kind is OpKind.COLLECTIVE and op.bytes_read == 1024**2


def test_parse_bytes_rejects_non_finite() -> None:
    with pytest.raises(WorkloadError):
        parse_bytes("1e999")
