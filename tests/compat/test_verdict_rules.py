"""The verdict rules, one hit at a time and in combination (verdict.py's docstring)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chipwise.compat.hits import Hit
from chipwise.compat.knowledge import PLATFORMS, VERDICT_ORDER, default_knowledge
from chipwise.compat.result import PlatformVerdict
from chipwise.compat.verdict import classify, cuda_specific_libs, frameworks, judge

R, C, D = "runs", "runs-with-changes", "does-not-run"


def _hit(kind: str, name: str, line: int = 1, **kw: object) -> Hit:
    return Hit(kind=kind, name=name, file="p.py", line=line, evidence="", **kw)  # type: ignore[arg-type]


def _judge(*hits: Hit) -> tuple[PlatformVerdict, ...]:
    k = default_knowledge()
    findings, _ = classify(hits, k)
    return judge(findings, k)


def _verdicts(*hits: Hit) -> tuple[str, ...]:
    return tuple(p.verdict for p in _judge(*hits))


# (nvidia-cuda, amd-rocm, intel-xpu, google-tpu)
@pytest.mark.parametrize(
    ("hits", "expected"),
    [
        pytest.param([], (R, R, R, R), id="nothing found"),
        pytest.param([_hit("signal", "cuda-kernel")], (R, C, C, D), id="custom .cu kernel"),
        pytest.param([_hit("signal", "graphics-api")], (R, R, R, D), id="OpenGL renderer"),
        pytest.param([_hit("import", "jax")], (R, R, C, R), id="pure JAX"),
        pytest.param([_hit("import", "torch")], (R, R, R, C), id="plain PyTorch"),
        pytest.param([_hit("import", "tensorflow")], (R, C, C, R), id="TensorFlow"),
        pytest.param([_hit("signal", "triton-kernel")], (R, R, R, D), id="Triton kernel"),
        pytest.param([_hit("import", "torch"), _hit("signal", "torch-cuda-api")], (R, R, C, C),
                     id="PyTorch with device='cuda'"),
        pytest.param([_hit("import", "torch"), _hit("import", "torch_xla")], (R, R, R, R),
                     id="PyTorch that already has torch_xla"),
        pytest.param([_hit("dist", "torch-xla")], (R, R, R, R), id="a TPU path never blocks GPUs"),
        pytest.param([_hit("dist", "flash-attn", optional=True, condition="extra 'gpu'")],
                     (R, R, R, R), id="optional flash-attn"),
        pytest.param([_hit("dist", "flash-attn")], (R, R, D, D), id="flash-attn"),
        pytest.param([_hit("dist", "intel-extension-for-pytorch")], (D, D, R, D), id="IPEX"),
        pytest.param([_hit("signal", "fp64-host")], (R, R, R, R), id="NumPy float64 is a note"),
        pytest.param([_hit("signal", "fp64-device")], (R, R, R, D), id="float64 on device"),
        pytest.param([_hit("signal", "cuda-build-pin")], (R, C, C, C), id="CUDA wheel pin"),
        pytest.param([_hit("conda", "pytorch")], (R, R, R, C), id="conda pytorch"),
        pytest.param([_hit("dist", "vllm"), _hit("dist", "tpu-inference")], (R, R, R, R),
                     id="vLLM with the TPU plugin"),
    ],
)  # fmt: skip
def test_verdict_table(hits: list[Hit], expected: tuple[str, str, str, str]) -> None:
    assert _verdicts(*hits) == expected


def test_tensorflow_on_tpu_runs_but_notes_tpu7x() -> None:
    tpu = _judge(_hit("import", "tensorflow"))[3]
    assert tpu.verdict == R
    assert any("TPU7x" in n for n in tpu.notes)


def test_torch_xla_note_says_the_tpu_change_is_already_made() -> None:
    tpu = _judge(_hit("import", "torch"), _hit("import", "torch_xla", line=2))[3]
    assert "torch: already handled by torch-xla" in tpu.notes


def test_issues_are_worst_first_grouped_by_rule_with_every_location() -> None:
    hits = [
        _hit("import", "torch", line=1),
        _hit("dist", "flash-attn", line=3),
        _hit("import", "flash_attn", line=7),
    ]
    tpu = _judge(*hits)[3]
    assert [i.key for i in tpu.issues] == ["flash-attn", "torch"]
    flash = tpu.issues[0]
    assert flash.locations == ("p.py:3", "p.py:7")
    assert flash.porting.startswith("jax.experimental.pallas.ops.tpu.flash_attention")
    assert (flash.verdict, flash.effort, tpu.effort) == (D, "medium", "medium")


def test_effort_is_the_largest_among_the_issues() -> None:
    tpu = _judge(_hit("dist", "apex"), _hit("signal", "cuda-kernel", line=2))[3]
    assert {i.key: i.effort for i in tpu.issues} == {"apex": "small", "cuda-kernel": "large"}
    assert tpu.effort == "large"


def test_an_optional_blocker_is_noted_not_counted() -> None:
    tpu = _judge(_hit("dist", "bitsandbytes", optional=True, condition="extra 'quant'"))[3]
    assert tpu.verdict == R and tpu.issues == ()
    assert "bitsandbytes is optional here (extra 'quant'); it does not run" in tpu.notes


def test_a_required_finding_beats_an_optional_one_at_the_same_place() -> None:
    k = default_knowledge()
    findings, _ = classify(
        [_hit("dist", "deepspeed", optional=True, condition="x"), _hit("dist", "deepspeed")], k
    )
    assert len(findings) == 1 and not findings[0].optional


def test_summary_helpers() -> None:
    k = default_knowledge()
    hits = [
        _hit("import", "torch"),
        _hit("dist", "flash-attn", line=2),
        _hit("dist", "vllm", line=3),  # TPU via plugin: not 'CUDA-specific'
        _hit("dist", "cupy-cuda12x", line=4, optional=True, condition="extra"),
        _hit("dist", "requests", line=5),
    ]
    findings, unclassified = classify(hits, k)
    assert cuda_specific_libs(findings) == ("flash-attn",)
    assert frameworks(findings, k) == ("pytorch",)
    assert unclassified == ("requests",)


SIGNAL_IDS = sorted(r.id for r in default_knowledge().rules if r.kind == "signal")
hit_lists = st.lists(
    st.builds(lambda name, line: _hit("signal", name, line), st.sampled_from(SIGNAL_IDS),
              st.integers(1, 50)),
    max_size=8,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(hit_lists, hit_lists)
def test_adding_signals_never_improves_a_verdict(a: list[Hit], b: list[Hit]) -> None:
    before = _verdicts(*a)
    after = _verdicts(*a, *b)
    for p, v0, v1 in zip(PLATFORMS, before, after, strict=True):
        assert VERDICT_ORDER.index(v1) >= VERDICT_ORDER.index(v0), p


@settings(max_examples=40, deadline=None)
@given(hit_lists)
def test_optional_findings_never_lower_a_verdict(hits: list[Hit]) -> None:
    optional = [replace(h, optional=True, condition="extra 'x'") for h in hits]
    assert _verdicts(*optional) == (R, R, R, R)
