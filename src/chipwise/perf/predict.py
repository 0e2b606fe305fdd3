"""``predict``: the library's main entry, one call on a ``Predictor``.

One workload, one chip type, a number of chips:

* a transformer (``TransformerSpec``) trains under a plan (given, or found by the planner)
  via ``step.train.StepModel``, or serves via ``step.serve.ServeModel``;
* a primitive (matmul, copy, all-reduce) goes to ``ops.primitives.predict_primitive``;
* an imported ``Graph`` is timed op by op on one chip; across chips it runs data-parallel
  (each chip runs the graph on its own batch, then an all-reduce of the gradients);
* a non-ML workload (graphics, fp64 HPC, ...) is not something this model predicts.

To predict one workload on many chip counts, build one ``Predictor`` and call it per count:
it reuses the per-shape timings.
"""

from __future__ import annotations

from collections.abc import Mapping

from chipwise.errors import PlanError
from chipwise.hardware.catalog import chip as find_chip
from chipwise.hardware.chip import Chip
from chipwise.perf.base import Plan, Prediction
from chipwise.perf.efficiency import Efficiency
from chipwise.perf.predictor import PRECISIONS, Predictor
from chipwise.workload.ir import Workload

__all__ = ["PRECISIONS", "predict"]


def predict(
    workload: Workload,
    chip: Chip | str,
    chips: int = 1,
    precision: str = "bf16",
    plan: Plan | None = None,
    *,
    plan_keys: Mapping[str, int | str] | None = None,
    allow_unfit: bool = False,
    efficiency: Efficiency | None = None,
) -> Prediction:
    """Predict how ``workload`` runs on ``chips`` x ``chip`` at ``precision``.

    Args:
        workload: the model and the phase (training or inference).
        chip: a ``Chip`` or a catalog id/alias.
        chips: how many chips.
        precision: bf16 | fp8 | int8 | fp16 | fp32 (matmul precision; see ``layers.Dtypes``).
        plan: a complete parallelism plan; ``None`` lets the planner choose.
        plan_keys: a partial plan: the planner keeps these keys and chooses the rest.
        allow_unfit: if no plan fits, return the least-memory one (``fits`` False) instead
            of raising ``DoesNotFitError``.
        efficiency: overrides the per-op efficiency parameters (calibration).

    Raises:
        UnsupportedOpError: a precision the chip has no rate for; a non-ML workload.
        PlanError: a plan inconsistent with the chips or the model.
        DoesNotFitError: no plan fits in memory (with the bytes needed).
    """
    c = chip if isinstance(chip, Chip) else find_chip(chip)
    if chips < 1:
        raise PlanError(f"chips must be >= 1, got {chips}")
    predictor = Predictor(workload, c, precision, efficiency=efficiency)
    return predictor.predict(chips, plan, plan_keys=plan_keys, allow_unfit=allow_unfit)
