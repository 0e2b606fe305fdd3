"""How long it takes: per-op models, collectives, whole training and serving steps.

Public entry points (the rest of the package is internal):

* ``predict(workload, chip, chips, precision, plan)`` -> ``TrainPrediction`` |
  ``InferPrediction`` | ``PrimitivePrediction``
* ``Plan`` / ``parse_plan`` - a parallelism plan and its ``--plan`` text form
"""

from chipwise.perf.base import (
    Assumption,
    Breakdown,
    InferPrediction,
    MemoryUse,
    OpTime,
    PerfModel,
    Plan,
    Prediction,
    PrimitivePrediction,
    TrainPrediction,
    parse_plan,
)
from chipwise.perf.predict import predict

__all__ = [
    "Assumption",
    "Breakdown",
    "InferPrediction",
    "MemoryUse",
    "OpTime",
    "PerfModel",
    "Plan",
    "Prediction",
    "PrimitivePrediction",
    "TrainPrediction",
    "parse_plan",
    "predict",
]
