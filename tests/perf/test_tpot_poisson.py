"""TPOT percentiles under Poisson arrivals (``engine._step_quantiles``): the prompt work
arriving while a request decodes is compound Poisson, a spread beside the binomial one of
which steps carry a chunk; MLPerf Server runs measure TPOT p99/p50 of 1.2-1.4."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from chipwise.perf.step.engine import Lengths, Rate, _step_quantiles

# Llama-3.1-405B's MLPerf Server step on B200 tp 4 (2048-token budget): ~40 ms decode-only,
# ~170 ms with a chunk, 0.95 prompts/s per replica of ~9.4k tokens, ~685-token answers
LENS = Lengths(
    inputs=np.array([4000.0, 9400.0, 15000.0]),
    outputs=np.array([685.0, 685.0, 685.0]),
    weights=np.array([0.25, 0.5, 0.25]),
)
RATE = Rate(b=60.0, t0_s=0.040, t1_s=0.170, chunk=1990.0, f=0.45, step_s=0.0985)


def test_poisson_arrivals_widen_the_tpot_tail_not_its_median() -> None:
    p50, p99 = _step_quantiles(RATE, LENS, 1.0)
    q50, q99 = _step_quantiles(RATE, LENS, 1.0, 0.95, LENS.inputs)
    assert q50 == p50 == RATE.step_s
    assert p99 / p50 < 1.1  # the binomial spread alone
    assert 1.15 < q99 / q50 < 1.5  # with the arrivals' (measured: 138 / 101 ms = 1.37)
    assert q99 <= RATE.t1_s


@given(rate=st.floats(0.01, 5.0))
def test_more_arrivals_never_narrow_the_tail_at_a_fixed_step(rate: float) -> None:
    lo = _step_quantiles(RATE, LENS, 1.0, rate, LENS.inputs)[1]
    hi = _step_quantiles(RATE, LENS, 1.0, 2 * rate, LENS.inputs)[1]
    assert hi >= lo
