"""Invariants at scale (hypothesis): more chips at a fixed global batch never make the step
longer unless the plan says what limits it, and a run's time grows with its tokens."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chipwise.errors import ChipwiseError
from chipwise.hardware import Chip, chip
from chipwise.perf import predict
from chipwise.perf.base import TrainPrediction
from chipwise.workload.ir import Training, TransformerSpec, Workload
from chipwise.workload.presets import load_preset

SPEC = TransformerSpec(
    name="tiny", n_layers=16, d_model=2048, n_heads=16, n_kv_heads=8, head_dim=128,
    d_ff=8192, vocab_size=32000,
)  # fmt: skip
# A step that more chips may leave as long: named in the planner's reason.
NAMED_LIMITS = ("communication", "pipeline bubble", "overhead", "memory")


def _chip(chip_id: str) -> Chip:
    """A catalog chip, or "mi300x-board": an MI300X board with no scale-out network (8 GPUs
    on xGMI, nothing between boards but the assumed Ethernet for pipeline sends)."""
    if chip_id == "mi300x-board":
        return replace(chip("mi300x"), scale_out=None)
    return chip(chip_id)


def _train(chip_id: str, chips: int, batch: int) -> TrainPrediction | None:
    wl = Workload(model=SPEC, phase=Training(seq_len=2048, global_batch=batch))
    try:
        pred = predict(wl, _chip(chip_id), chips, "bf16")
    except ChipwiseError:
        return None  # no layout of that many chips runs this batch: nothing to compare
    assert isinstance(pred, TrainPrediction)
    return pred


@settings(max_examples=12, deadline=None)
@given(
    chip_id=st.sampled_from(["h100-sxm", "tpu-v5e", "mi300x"]),
    log2_chips=st.integers(min_value=0, max_value=8),
    batch=st.sampled_from([64, 256, 1024]),
)
# 64 -> 128 MI300X boards without a scale-out network at batch 64: 16 layers leave 128 chips
# only pp=16 or tp=8 layouts, and the step grows (communication and the bubble outgrow the
# halved compute): the plan names it
@example(chip_id="mi300x-board", log2_chips=6, batch=64)
def test_more_chips_never_give_a_longer_step_unless_the_plan_says_why(
    chip_id: str, log2_chips: int, batch: int
) -> None:
    n = 2**log2_chips
    fewer, more = _train(chip_id, n, batch), _train(chip_id, 2 * n, batch)
    if fewer is None or more is None or not fewer.fits:
        return
    if more.step_time_s > fewer.step_time_s * (1 + 1e-9):
        assert more.limited_by in NAMED_LIMITS, (n, more.breakdown)
        plan_note = next(a for a in more.assumptions if a.name == "plan")
        assert f"limited by {more.limited_by}" in str(plan_note.value)


@settings(max_examples=20, deadline=None)
@given(
    tokens=st.floats(min_value=1e6, max_value=1e13, allow_nan=False),
    more=st.floats(min_value=1.0, max_value=1e3, allow_nan=False),
)
def test_run_time_grows_with_tokens(tokens: float, more: float) -> None:
    from chipwise.cost import TrainingRun

    pred = _PRED
    days = [TrainingRun(tokens=t).steps(pred) * pred.step_time_s for t in (tokens, tokens * more)]
    assert days[0] <= days[1]
    assert math.isfinite(days[1])


_PRED = _train("h100-sxm", 64, 256)
assert _PRED is not None


def test_the_default_batch_never_shrinks_with_more_tokens() -> None:
    from chipwise.advise.defaults import default_global_batch

    batches = [default_global_batch(SPEC, 10**e, 2048)[0] for e in range(8, 15)]
    assert batches == sorted(batches)


@pytest.mark.parametrize(
    ("model_id", "chip_id", "seq_len", "batch"),
    [
        ("llama3-405b", "h100-sxm", 8192, 2048),
        ("llama3-405b", "tpu-v6e", 8192, 2048),
        ("llama3-405b", "b200", 8192, 2048),
        ("deepseek-v3", "h100-sxm", 4096, 8192),
    ],
)
def test_google_scale_doublings_never_lengthen_the_step_unless_named(
    model_id: str, chip_id: str, seq_len: int, batch: int
) -> None:
    # the scale: 1,024 -> 16,384 chips at the batch such runs use (Llama 3 405B:
    # 2,048 x 8k tokens; DeepSeek-V3: 8,192 x 4k); the planner's best plan at each count
    spec = load_preset(model_id)
    wl = Workload(model=spec, phase=Training(seq_len=seq_len, global_batch=batch))
    preds = [predict(wl, chip(chip_id), 2**k, "bf16") for k in range(10, 15)]
    for fewer, more in itertools.pairwise(preds):
        assert isinstance(fewer, TrainPrediction) and isinstance(more, TrainPrediction)
        assert fewer.fits and more.fits
        if more.step_time_s > fewer.step_time_s * (1 + 1e-9):
            assert more.limited_by in NAMED_LIMITS, (more.chips, more.breakdown)
