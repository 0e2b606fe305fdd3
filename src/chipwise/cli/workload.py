"""``chipwise workload``: what a workload is, before any chip is involved.

``chipwise workload list`` shows the model zoo and the non-ML kinds; ``chipwise workload
show WORKLOAD`` shows parameters, FLOPs per token, op mix, memory needs and the source of
a zoo id, a config.json, an .onnx file, a ``module:factory`` (with ``--trust-code``), a
primitive (``matmul:MxNxK``) or a non-ML kind (``hpl``).

JSON (``--json``) carries ``schema_version`` 1; fields are only ever added within it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from chipwise.cli.app import app
from chipwise.cli.output import console, print_json, quiet_option, show_progress, spinner
from chipwise.limits import MAX_SEQ_LEN
from chipwise.units import DTYPE_BYTES, format_bytes, format_count, format_rate

if TYPE_CHECKING:
    from chipwise.workload.ir import Graph, Model, NonMLKind, TransformerSpec

JSON_SCHEMA_VERSION = 1
FLOPS_CONVENTION = (
    "training = 6 x (non-embedding matmul params, active experts only, + LM head) "
    "+ 12 x layers x seq x heads x head_dim (non-causal); forward = 1/3"
)

workload_app = typer.Typer(
    help="Workloads: the model zoo, config.json files, primitives and non-ML kinds.",
    no_args_is_help=True,
)
app.add_typer(workload_app, name="workload")


@workload_app.command("list")
def list_workloads(
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
) -> None:
    """List the model zoo (ids, parameters, dense or MoE) and the non-ML kinds."""
    from chipwise.workload.kinds import NON_ML_KINDS
    from chipwise.workload.presets import PRESETS
    from chipwise.workload.primitives import SYNTAX

    models = [_zoo_entry(p.id, p.title, p.aliases) for p in PRESETS]
    kinds = [{"id": k.name, "title": k.title} for k in NON_ML_KINDS]
    if as_json:
        print_json({"schema_version": JSON_SCHEMA_VERSION, "models": models, "non_ml": kinds})
        return
    table = _compact_table("Model zoo")
    for column in ("id", "model", "type", "params", "active"):
        right = column in ("params", "active")
        table.add_column(
            column,
            justify="right" if right else "left",
            no_wrap=column != "model",
            max_width=16 if column == "model" else None,  # titles wrap; ids and aliases never
        )
    # one per line, never cut: the title column wraps instead
    table.add_column(
        "aliases",
        overflow="fold",
        min_width=max(len(a) for p in PRESETS for a in p.aliases[:2] if "/" not in a),
    )
    for m in models:
        table.add_row(
            m["id"],
            m["title"],
            m["type"],
            format_count(m["params_total"]),
            format_count(m["params_active"]),
            "\n".join([a for a in m["aliases"] if "/" not in a][:2]),
        )
    kinds_table = _compact_table("Non-ML workloads")
    kinds_table.add_column("id", no_wrap=True)
    kinds_table.add_column("what")
    for k in kinds:
        kinds_table.add_row(k["id"], k["title"])
    hint = Text(
        "Also: any config.json path, model.onnx, module:factory (--trust-code), "
        f"or a primitive: {SYNTAX}."
    )
    console.print(Group(table, kinds_table, hint))


@workload_app.command("show")
def show_workload(
    workload: str = typer.Argument(
        ...,
        metavar="WORKLOAD",
        help="Zoo id or alias, config.json path, model.onnx, module:factory, "
        "matmul:MxNxK, copy:BYTES, allreduce:BYTES, or a non-ML kind (e.g. hpl).",
    ),
    seq_len: int = typer.Option(
        4096,
        "--seq-len",
        min=1,
        max=MAX_SEQ_LEN,
        help="Sequence length (tokens) for FLOPs per token.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema_version 1)."),
    trust_code: bool = typer.Option(
        False, "--trust-code", help="Allow importing and running a module:factory."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Parameters, FLOPs per token, op mix, memory needs and the source of a workload."""
    from chipwise.workload.load import load_workload_model

    with spinner(show_progress(quiet=quiet, as_json=as_json), f"reading {workload}"):
        model = load_workload_model(workload, trust_code=trust_code)
    summary = summarize(model, seq_len)
    if as_json:
        print_json({"schema_version": JSON_SCHEMA_VERSION, "workload": summary})
        return
    console.print(_detail_table(summary))


def _compact_table(title: str) -> Table:
    """A borderless table with a title on the left: readable at 80 columns."""
    return Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        show_edge=False,
    )


# --- summaries (plain dicts, the JSON schema) ------------------------------------------------


def summarize(model: Model, seq_len: int) -> dict[str, Any]:
    """Everything ``workload show`` prints, as JSON-ready data."""
    from chipwise.workload.ir import Graph, Primitive, TransformerSpec
    from chipwise.workload.primitives import primitive_graph

    if isinstance(model, TransformerSpec):
        return _transformer_summary(model, seq_len)
    if isinstance(model, Graph):
        return _graph_summary(model)
    if isinstance(model, Primitive):
        summary = _graph_summary(primitive_graph(model))
        return summary | {
            "type": "primitive",
            "primitive": {
                "kind": model.kind,
                "mnk": list(model.mnk),
                "n_bytes": model.n_bytes,
                "dtype": model.dtype,
            },
            "source": "microbenchmark primitive",
        }
    return _kind_summary(model)


def _transformer_summary(spec: TransformerSpec, seq_len: int) -> dict[str, Any]:
    from chipwise.workload import accounting as acc

    train = acc.model_flops_per_token(spec, seq_len)
    share = acc.tensor_flops_share(spec, seq_len)
    return {
        "name": spec.name,
        "type": "transformer",
        "kind": "moe" if spec.is_moe else "dense",
        "source": spec.source,
        "seq_len": seq_len,
        "architecture": asdict(spec),
        "params": {
            "total": acc.params_total(spec),
            "active": acc.params_active(spec),
            "embedding": acc.embedding_params(spec),
            "matmul_non_embedding": acc.matmul_params(spec),
            "lm_head": acc.lm_head_params(spec),
            "published_total": spec.published_params or None,
        },
        "flops_per_token": {
            "train": train,
            "forward": train / 3,
            "train_causal_halved": acc.model_flops_per_token(spec, seq_len, causal_halving=True),
            "convention": FLOPS_CONVENTION,
        },
        "op_mix": {"tensor_share": share, "other_share": 1 - share},
        "memory": {
            "weights_bytes_bf16": acc.weight_bytes(spec, "bf16"),
            "training_bytes_per_param": acc.ADAM_MIXED_BYTES_PER_PARAM,
            "training_state_bytes": acc.training_state_bytes(spec),
            "kv_cache_bytes_per_token_bf16": acc.kv_cache_bytes_per_token(spec, "bf16"),
        },
    }


def _graph_summary(graph: Graph) -> dict[str, Any]:
    from chipwise.workload import accounting as acc

    share = graph.tensor_flops_share
    weights = graph.params * DTYPE_BYTES["bf16"]
    return {
        "name": graph.name,
        "type": "graph",
        "source": graph.source,
        "params": {"total": graph.params},
        "flops_per_step": graph.flops,
        "bytes_moved_per_step": graph.bytes_moved,
        "ops": len(graph.ops),
        "op_mix": {"tensor_share": share, "other_share": 1 - share if graph.flops else 0.0},
        "memory": {
            "weights_bytes_bf16": weights,
            "training_bytes_per_param": acc.ADAM_MIXED_BYTES_PER_PARAM,
            "training_state_bytes": graph.params * acc.ADAM_MIXED_BYTES_PER_PARAM,
        },
        "notes": list(graph.notes),
    }


def _kind_summary(kind: NonMLKind) -> dict[str, Any]:
    return {
        "name": kind.name,
        "type": "non-ml",
        "title": kind.title,
        "why_not_tpu": kind.description,
        "requirements": [asdict(r) for r in kind.requirements],
        "sources": list(kind.sources),
    }


def _zoo_entry(preset_id: str, title: str, aliases: tuple[str, ...]) -> dict[str, Any]:
    from chipwise.workload import accounting as acc
    from chipwise.workload.presets import load_preset

    spec = load_preset(preset_id)
    return {
        "id": preset_id,
        "title": title,
        "type": "MoE" if spec.is_moe else "dense",
        "params_total": acc.params_total(spec),
        "params_active": acc.params_active(spec),
        "aliases": list(aliases),
    }


# --- rendering -------------------------------------------------------------------------------


def _detail_table(s: dict[str, Any]) -> Table:
    table = Table(title=f"{s['name']} ({s['type']})", title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for field, value in _detail_rows(s):
        table.add_row(field, value)
    return table


def _detail_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    if s["type"] == "non-ml":
        needs = "; ".join(f"{r['capability']}: {r['why']}" for r in s["requirements"])
        return [
            ("workload", s["title"]),
            ("needs", needs),
            ("why not a TPU", s["why_not_tpu"]),
            ("sources", "; ".join(s["sources"])),
        ]
    mix = s["op_mix"]
    mix_text = (
        f"tensor ops (matmul, attention) {mix['tensor_share']:.1%}, "
        f"other (norms, activations, softmax, copies) {mix['other_share']:.1%}"
    )
    mem = s["memory"]
    if s["type"] != "transformer":
        rows = [
            ("FLOPs per step", _flop(s["flops_per_step"])),
            ("bytes moved per step", format_bytes(s["bytes_moved_per_step"])),
            ("ops", str(s["ops"])),
            ("op mix (FLOPs)", mix_text),
        ]
        if s["params"]["total"]:
            rows.insert(0, ("parameters", format_count(s["params"]["total"])))
            rows.append(("weights (bf16)", format_bytes(mem["weights_bytes_bf16"])))
        return [*rows, ("source", s["source"] or "-")]
    p, f, arch = s["params"], s["flops_per_token"], s["architecture"]
    published = f" (published {format_count(p['published_total'])})" if p["published_total"] else ""
    params = f"total {format_count(p['total'])}{published}"
    if s["kind"] == "moe":
        params += f", active {format_count(p['active'])}"
    kv = mem["kv_cache_bytes_per_token_bf16"]
    return [
        ("parameters", params),
        ("architecture", _architecture_text(arch)),
        (
            f"FLOPs per token (seq {s['seq_len']})",
            f"train {_flop(f['train'])}, forward {_flop(f['forward'])} "
            f"(causal-halved train {_flop(f['train_causal_halved'])})",
        ),
        ("op mix (FLOPs)", mix_text),
        ("weights (bf16)", format_bytes(mem["weights_bytes_bf16"])),
        (
            "training state",
            f"{format_bytes(mem['training_state_bytes'])} at "
            f"{mem['training_bytes_per_param']:g} B/param (Adam, mixed precision; "
            "activations extra)",
        ),
        ("KV cache (bf16)", f"{format_bytes(kv)} per token" if kv else "none (encoder)"),
        ("source", s["source"] or "-"),
    ]


def _architecture_text(a: dict[str, Any]) -> str:
    heads = f"{a['n_heads']} heads ({a['n_kv_heads']} KV) x {a['head_dim']}"
    if a["kv_lora_rank"]:
        heads += f", MLA latent {a['kv_lora_rank']}"
    mlp = f"MLP {a['d_ff']}{' gated' if a['gated_mlp'] else ''}"
    if a["n_experts"]:
        shared = f" + {a['n_shared_experts']} shared" if a["n_shared_experts"] else ""
        mlp += f"; {a['experts_per_token']} of {a['n_experts']} experts{shared} x {a['moe_d_ff']}"
    layers = f"{a['n_layers']} layers"
    if a["n_encoder_layers"]:
        layers = f"{a['n_encoder_layers']} encoder + {a['n_layers']} decoder layers"
    return f"{layers}, d_model {a['d_model']}, {heads}, {mlp}, vocab {a['vocab_size']}"


def _flop(value: float) -> str:
    return format_rate(value, "FLOP", digits=4)
