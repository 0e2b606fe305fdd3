"""What runs: the workload IR, the model zoo, config readers, non-ML kinds and accounting.

``load_workload_model("llama3-70b")`` resolves anything a user can type (zoo id, config
path, ``matmul:MxNxK``, ``hpl``, ``model.onnx``, ``module:factory``); ``accounting`` holds
the parameter, FLOPs-per-token and memory formulas.
"""

from chipwise.workload import accounting
from chipwise.workload.accounting import (
    kv_cache_bytes_per_token,
    model_flops_per_token,
    params_active,
    params_total,
)
from chipwise.workload.config import load_config, spec_from_config
from chipwise.workload.ir import (
    Graph,
    Inference,
    Model,
    NonMLKind,
    Op,
    OpKind,
    Phase,
    PrefillPool,
    Primitive,
    Requirement,
    Training,
    TransformerSpec,
    Workload,
    engine_id,
    parse_prefill_pool,
)
from chipwise.workload.kinds import NON_ML_KINDS, non_ml_kind
from chipwise.workload.load import load_workload_model
from chipwise.workload.presets import PRESETS, Preset, load_preset, preset_ids
from chipwise.workload.primitives import parse_primitive, primitive_graph

__all__ = [
    "NON_ML_KINDS",
    "PRESETS",
    "Graph",
    "Inference",
    "Model",
    "NonMLKind",
    "Op",
    "OpKind",
    "Phase",
    "PrefillPool",
    "Preset",
    "Primitive",
    "Requirement",
    "Training",
    "TransformerSpec",
    "Workload",
    "accounting",
    "engine_id",
    "kv_cache_bytes_per_token",
    "load_config",
    "load_preset",
    "load_workload_model",
    "model_flops_per_token",
    "non_ml_kind",
    "params_active",
    "params_total",
    "parse_prefill_pool",
    "parse_primitive",
    "preset_ids",
    "primitive_graph",
    "spec_from_config",
]
