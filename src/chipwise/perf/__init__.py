"""How long it takes: per-op models, collectives, whole training and serving steps.

Later stages use perf only through the names exported here (the folders below are
internal): ``ops/`` times single ops per chip family, ``comm/`` collectives, ``plan/``
parallelism, memory and the planner, ``step/`` training and serving steps.

* ``Predictor(workload, chip, precision)`` - the one way in: ``.train(chips)``,
  ``.serve(chips)``, ``.plan(chips)``, ``.predict(chips)``, lower bounds for a search
* ``predict(workload, chip, chips, precision, plan)`` -> ``TrainPrediction`` |
  ``InferPrediction`` | ``PrimitivePrediction`` (one call on a ``Predictor``)
* ``Plan`` / ``parse_plan`` / ``plan_constraints`` - a parallelism plan and its ``--plan`` text
* ``Efficiency`` / ``efficiency_for`` - the per-chip efficiency parameters (calibration)
* ``model_for`` / ``time_graph`` / ``predict_primitive`` and the roofline helpers - per-op
  timing, for the microbenchmark comparison and profiles in ``bench``
"""

from chipwise.perf.base import (
    PLAN_SWITCHES,
    Assumption,
    Breakdown,
    InferPrediction,
    MemoryUse,
    OpTime,
    PerfModel,
    Plan,
    Prediction,
    PrimitivePrediction,
    ServingLoadResult,
    TrainPrediction,
    parse_plan,
)
from chipwise.perf.efficiency import PARAMETERS as EFFICIENCY_PARAMETERS
from chipwise.perf.efficiency import Efficiency, efficiency_for
from chipwise.perf.ops.graph import time_graph
from chipwise.perf.ops.layers import compute_dtype
from chipwise.perf.ops.models import model_for
from chipwise.perf.ops.primitives import predict_primitive
from chipwise.perf.ops.roofline import op_bytes, op_flops, roof, timed
from chipwise.perf.plan.bounds import memory_floor_bytes, step_floor_s
from chipwise.perf.plan.planner import ServeChoice, TrainChoice, plan_constraints
from chipwise.perf.predict import predict
from chipwise.perf.predictor import (
    PRECISIONS,
    Predictor,
    SloServing,
    decode_chips,
    precision_id,
    served_precision,
)

__all__ = [
    "EFFICIENCY_PARAMETERS",
    "PLAN_SWITCHES",
    "PRECISIONS",
    "Assumption",
    "Breakdown",
    "Efficiency",
    "InferPrediction",
    "MemoryUse",
    "OpTime",
    "PerfModel",
    "Plan",
    "Prediction",
    "Predictor",
    "PrimitivePrediction",
    "ServeChoice",
    "ServingLoadResult",
    "SloServing",
    "TrainChoice",
    "TrainPrediction",
    "compute_dtype",
    "decode_chips",
    "efficiency_for",
    "memory_floor_bytes",
    "model_for",
    "op_bytes",
    "op_flops",
    "parse_plan",
    "plan_constraints",
    "precision_id",
    "predict",
    "predict_primitive",
    "roof",
    "served_precision",
    "step_floor_s",
    "time_graph",
    "timed",
]
