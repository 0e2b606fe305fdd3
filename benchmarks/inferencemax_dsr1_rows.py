"""Write measurements-serving-inferencemax-dsr1.csv (rows IMX-D-*) from InferenceMAX run artifacts.

Usage: python benchmarks/inferencemax_dsr1_rows.py RAW_DIR > src/chipwise/validate/data/...csv
RAW_DIR holds run_<id>/agg_bmk.json as github:gminneci/mantile@72ff84eb reconcile/sources/
inferencemax/raw/ stores them (third-party copies of the official GitHub Actions artifacts).

Selection (mechanical, stated in docs/performance.md): single-node, disagg false,
spec_decoding none, framework sglang, DeepSeek-R1-0528 checkpoints; per (hw, framework,
precision, tp, ep, dp_attention, isl, osl, conc) the latest run's entry; per config the
concurrencies 4, 16, 64 and the config's largest; per entry output tokens/s per GPU, median
TPOT and median TTFT. The MI355X ATOM entries (framework atom) follow by the same rule,
appended after the SGLang rows (chipwise engine "atom" since 2026-12-06; left out before).
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import sys
from pathlib import Path

# the InferenceMAX rows' CSV columns, one list for both generators (run as a script, this
# directory is on sys.path)
from inferencemax_rows import COLUMNS, stated_memory_fraction
from random_lengths import mean_length

MANTILE = "gminneci/mantile"
MANTILE_COMMIT = "72ff84ebfd56ee0b15bd17d7d49a70fbb4e50256"
IMX = "SemiAnalysisAI/InferenceX"
RAW = "reconcile/sources/inferencemax/raw"
RATIO = 0.8  # benchmark-tmpl.yml random-range-ratio default; run-sweep.yml passes none

# Run creation times GitHub reports for five runs (mantile reconcile/by_model/
# openai_GPT-OSS-120B/inferencemax.csv, columns run_id / benchmark_date): the other runs'
# days are interpolated between them (run ids grow with time; +-1 day).
ANCHORS = (
    (20308883467, "2025-12-17T15:55:33"),
    (20667906037, "2026-01-02T22:24:09"),
    (20764588467, "2026-01-06T22:51:14"),
    (20786863188, "2026-01-07T15:36:44"),
    (21012127808, "2026-01-14T22:27:36"),
)

CHIP = {
    "b200": "b200",
    "h200": "h200-sxm",
    "mi300x": "mi300x",
    "mi325x": "mi325x",
    "mi355x": "mi355x",
}
WORKLOAD = {
    "nvidia/DeepSeek-R1-0528-FP4-V2": "configs/nvidia-deepseek-r1-fp4-v2.json",
    "amd/DeepSeek-R1-0528-MXFP4-Preview": "configs/amd-deepseek-r1-0528-mxfp4-preview.json",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
}
CHECKPOINT = {
    "nvidia/DeepSeek-R1-0528-FP4-V2": (
        "Checkpoint nvidia/DeepSeek-R1-0528-FP4-V2 (= -0528-NVFP4-v2): workload "
        "configs/nvidia-deepseek-r1-fp4-v2.json states its quantisation (ModelOpt NVFP4 with "
        "q_a/q_b/kv_a/kv_b projections, router, embeddings, head and MTP layer kept in bf16, "
        "o_proj quantised), so chipwise runs those four MLA projections in bf16."
    ),
    "amd/DeepSeek-R1-0528-MXFP4-Preview": (
        "Checkpoint amd/DeepSeek-R1-0528-MXFP4-Preview: workload "
        "configs/amd-deepseek-r1-0528-mxfp4-preview.json states its quantisation (AMD-Quark "
        "OCP MXFP4 weights and activations, 32-element blocks; every self_attn projection, the "
        "router and the LM head excluded, so bf16: the model card's --exclude_layers); "
        "chipwise's fp4 counts 4.5 bits a weight where MXFP4 is 4.25."
    ),
    "deepseek-ai/DeepSeek-R1-0528": (
        "Checkpoint deepseek-ai/DeepSeek-R1-0528: DeepSeek-V3's architecture (671B, 37B "
        "active; zoo id deepseek-v3), released in block-scaled fp8 (128x128 weight blocks; fp8 "
        "weights and activations); its MTP layer is unused (no speculative decoding)."
    ),
}

# Launch flags read from benchmarks/dsr1_<precision>_<hw>_{docker,slurm}.sh at the commit
# that ran the entry's image: (commit, script, flags text, max_num_seqs, why, kv, kv why,
# max_num_tokens(isl, osl, conc), tokens why, num_prompts(osl, conc), prompts why)
SGL_SEQS_DEFAULT = (
    "not set: SGLang's default, max_running_requests from the KV pool clamped to "
    "[2048, 4096] (python/sglang/srt/model_executor/model_runner.py init_memory_pool; "
    "2048 at these context lengths, as chipwise's perf/step/engine.py notes)"
)
KV_AUTO = "--kv-cache-dtype not set: SGLang's 'auto' = the model dtype, bf16 KV for this checkpoint"
KV_FP8 = "--kv-cache-dtype fp8_e4m3"
P50_20 = "NUM_PROMPTS = CONC x 50 (x 20 at OSL 8192), from the runner's launch script"
P10 = "--num-prompts CONC x 10"


def _b200_prompts(model: str, osl: int, conc: int) -> int:
    # runners/launch_b200-{dgxc,nvd}.sh: x50 / x20 only for nvidia/DeepSeek-R1-0528-FP4 or
    # deepseek-ai/DeepSeek-R1-0528; the -FP4-V2 checkpoint falls to x10
    if model == "deepseek-ai/DeepSeek-R1-0528":
        return conc * (20 if osl == 8192 else 50)
    return conc * 10


SETUPS = {
    ("b200", "fp4"): dict(
        commit="d27433dffb7b90ffc461ede429d897219e950b8b",
        script="benchmarks/dsr1_fp4_b200_docker.sh",
        flags=(
            "--tensor-parallel-size=$TP --data-parallel-size=1 --ep-size $EP_SIZE "
            "--cuda-graph-max-bs 256 --max-running-requests 256 --mem-fraction-static 0.85 "
            "--kv-cache-dtype fp8_e4m3 --chunked-prefill-size 16384 --quantization modelopt_fp4 "
            "--enable-flashinfer-allreduce-fusion --scheduler-recv-interval 10 (30 at CONC >= 16) "
            "--enable-symm-mem --disable-radix-cache --attention-backend trtllm_mla "
            "--moe-runner-backend flashinfer_trtllm --stream-interval 10"
        ),
        seqs=256,
        seqs_why="--max-running-requests 256",
        kv="fp8",
        kv_why=KV_FP8,
        tokens=lambda isl, osl, conc: 16384,
        tokens_why=(
            "--chunked-prefill-size 16384 with --max-prefill-tokens not set (SGLang's "
            "default 16384, server_args.py)"
        ),
        prompts_why=(
            "NUM_PROMPTS = CONC x 10: runners/launch_b200-{dgxc,nvd}.sh give x50 (x20 at OSL "
            "8192) only to nvidia/DeepSeek-R1-0528-FP4 and deepseek-ai/DeepSeek-R1-0528, and "
            "the -FP4-V2 name matches neither"
        ),
    ),
    ("b200", "fp8"): dict(
        commit="d27433dffb7b90ffc461ede429d897219e950b8b",
        script="benchmarks/dsr1_fp8_b200_docker.sh",
        flags=(
            "SGL_ENABLE_JIT_DEEPGEMM=false SGLANG_ENABLE_FLASHINFER_GEMM=true; "
            "--tensor-parallel-size=$TP --data-parallel-size=1 --ep-size $EP_SIZE "
            "--cuda-graph-max-bs 128 --max-running-requests 128 --mem-fraction-static 0.82 "
            "--kv-cache-dtype fp8_e4m3 --chunked-prefill-size 32768 --max-prefill-tokens 32768 "
            "--enable-flashinfer-allreduce-fusion --scheduler-recv-interval 10 (30 at CONC >= 16) "
            "--disable-radix-cache --attention-backend trtllm_mla --stream-interval 30 "
            "--moe-runner-backend flashinfer_trtllm --quantization fp8 (at TP 8 the same in "
            "PR #411, 1d29967c4, 2026-01-13, which run 20972034325 ran)"
        ),
        seqs=128,
        seqs_why="--max-running-requests 128",
        kv="fp8",
        kv_why=KV_FP8,
        tokens=lambda isl, osl, conc: 32768,
        tokens_why="--chunked-prefill-size 32768 --max-prefill-tokens 32768",
        prompts_why=P50_20 + " (runners/launch_b200-{dgxc,nvd}.sh)",
    ),
    ("h200", "fp8"): dict(
        commit="d27433dffb7b90ffc461ede429d897219e950b8b",
        script="benchmarks/dsr1_fp8_h200_slurm.sh",
        flags=(
            "--tensor-parallel-size=$TP --data-parallel-size=1 --disable-radix-cache "
            "--max-running-requests 512 --cuda-graph-max-bs 512 (ISL/OSL 1024/1024; 256 and 256 "
            "otherwise) --chunked-prefill-size 32768 --max-prefill-tokens 32768 "
            "--mem-fraction-static 0.82 --attention-backend flashinfer --stream-interval 10"
        ),
        seqs=None,
        seqs_why="--max-running-requests 512 at 1024/1024, 256 otherwise",
        kv="bf16",
        kv_why=KV_AUTO,
        tokens=lambda isl, osl, conc: 32768,
        tokens_why="--chunked-prefill-size 32768 --max-prefill-tokens 32768",
        prompts_why=P10 + " (the script's own)",
    ),
}
# Run 20972034325 (2026-01-13) is PR #411 ("adds more SGLang B200 configs", merged as
# 1d29967c4 the same day): TP 8 keeps the flags above; TP 4 (8k/1k only) gets its own
SETUPS[("b200", "fp8", 4)] = dict(
    commit="1d29967c46d489dceedf4142f7038053052d55b0",
    script="benchmarks/dsr1_fp8_b200_docker.sh",
    flags=(
        "SGL_ENABLE_JIT_DEEPGEMM=false SGLANG_ENABLE_FLASHINFER_GEMM=true; at TP 4: "
        "--tensor-parallel-size=4 --data-parallel-size=1 --ep-size 1 --cuda-graph-max-bs 32 "
        "--max-running-requests 32 --mem-fraction-static 0.95 --kv-cache-dtype fp8_e4m3 "
        "--chunked-prefill-size 8192 --max-prefill-tokens 8192 "
        "--enable-flashinfer-allreduce-fusion --scheduler-recv-interval 10 "
        "--disable-radix-cache --attention-backend trtllm_mla "
        "--stream-interval 30 --moe-runner-backend flashinfer_trtllm --quantization fp8 (the "
        "search space PR #411 added: 8k/1k, TP 4, CONC 4-32). The fp8 weights fill ~168 GB of "
        "each B200's memory at TP 4: --mem-fraction-static 0.95 is what leaves a KV pool "
        "(SGLang's default would leave one of a few sequences)"
    ),
    seqs=32,
    seqs_why="--max-running-requests 32",
    kv="fp8",
    kv_why=KV_FP8,
    tokens=lambda isl, osl, conc: 8192,
    tokens_why="--chunked-prefill-size 8192 --max-prefill-tokens 8192",
    prompts_why=P50_20 + " (runners/launch_b200-{dgxc,nvd}.sh)",
)
_AMD_FP8 = dict(
    commit="70c1eceb6bd7521fc68a8c121d27a9dd58e4ab01",
    seqs=2048,
    seqs_why=SGL_SEQS_DEFAULT,
    kv="bf16",
    kv_why=KV_AUTO,
    tokens=lambda isl, osl, conc: 196608,
    tokens_why="--chunked-prefill-size 196608 --max-prefill-tokens 196608",
)
SETUPS[("mi300x", "fp8")] = dict(
    _AMD_FP8,
    script="benchmarks/dsr1_fp8_mi300x_{docker,slurm}.sh",
    flags=(
        "SGLANG_USE_AITER=1; --tensor-parallel-size=$TP --mem-fraction-static=0.8 "
        "--cuda-graph-max-bs=128 --chunked-prefill-size=196608 --num-continuous-decode-steps=4 "
        "--max-prefill-tokens=196608 --disable-radix-cache (docker and slurm scripts alike)"
    ),
    prompts_why=P10 + " (the script's own)",
)
SETUPS[("mi325x", "fp8")] = dict(
    SETUPS[("mi300x", "fp8")], script="benchmarks/dsr1_fp8_mi325x_slurm.sh"
)
SETUPS[("mi355x", "fp8")] = dict(
    _AMD_FP8,
    script="benchmarks/dsr1_fp8_mi355x_slurm.sh",
    flags=(
        "SGLANG_USE_AITER=1 RCCL_MSCCL_ENABLE=0 ROCM_QUICK_REDUCE_QUANTIZATION=INT4; "
        "--attention-backend aiter --tensor-parallel-size $TP --chunked-prefill-size 196608 "
        "--mem-fraction-static 0.8 --disable-radix-cache --num-continuous-decode-steps 4 "
        "--max-prefill-tokens 196608 --cuda-graph-max-bs 128 --enable-torch-compile"
    ),
    prompts_why=P50_20 + " (runners/launch_mi355x-amd.sh)",
)
SETUPS[("mi355x", "fp4")] = dict(
    commit="2c679ab9dc476db25995c3c02ae827ddce03a13f",
    script="benchmarks/dsr1_fp4_mi355x_slurm.sh",
    flags=(
        "SGLANG_USE_AITER=1 ROCM_QUICK_REDUCE_QUANTIZATION=INT4; --tensor-parallel-size=$TP "
        "--chunked-prefill-size=$PREFILL_SIZE --max-prefill-tokens=$PREFILL_SIZE (196608; 32768 "
        "at ISL/OSL 8192/1024 with CONC > 32) --mem-fraction-static=0.8 --disable-radix-cache "
        "--num-continuous-decode-steps=4 --cuda-graph-max-bs=128 --attention-backend aiter "
        "--kv-cache-dtype fp8_e4m3"
    ),
    seqs=2048,
    seqs_why=SGL_SEQS_DEFAULT,
    kv="fp8",
    kv_why=KV_FP8,
    tokens=lambda isl, osl, conc: 32768 if (isl, osl) == (8192, 1024) and conc > 32 else 196608,
    tokens_why="--chunked-prefill-size / --max-prefill-tokens $PREFILL_SIZE",
    prompts_why=P50_20 + " (runners/launch_mi355x-amd.sh)",
)

METRICS = (
    (
        "output_tokens_per_s_per_chip",
        "output_tput_per_gpu",
        "output tokens/s per GPU (the published per-GPU figure: the deployment's output "
        "tokens/s over its TP GPUs)",
    ),
    ("tpot_p50_s", "median_tpot", "median TPOT in seconds"),
    ("ttft_p50_s", "median_ttft", "median TTFT in seconds"),
)
CONCS = (4, 16, 64)


def run_day(run: int) -> str:
    from datetime import datetime

    pts = [(r, datetime.fromisoformat(t)) for r, t in ANCHORS]
    for (r0, t0), (r1, t1) in itertools.pairwise(pts):
        if r0 <= run <= r1 or (run < r0 and r0 == pts[0][0]) or (run > r1 and r1 == pts[-1][0]):
            t = t0 + (t1 - t0) * ((run - r0) / (r1 - r0))
            return t.date().isoformat()
    raise ValueError(run)


def select(raw: Path, framework: str = "sglang") -> list[tuple[int, dict]]:
    latest: dict[tuple, tuple[int, dict]] = {}
    runs = sorted(raw.glob("run_*/agg_bmk.json"), key=lambda p: int(p.parent.name[4:]))
    for path in runs:
        run = int(path.parent.name[4:])
        for e in json.loads(path.read_text()):
            if e["model"] not in WORKLOAD or e["framework"] != framework:
                continue
            if e["disagg"] or e["spec_decoding"] != "none" or e.get("is_multinode"):
                continue
            key = tuple(
                e[k]
                for k in (
                    "hw",
                    "framework",
                    "precision",
                    "tp",
                    "ep",
                    "dp_attention",
                    "isl",
                    "osl",
                    "conc",
                )
            )
            latest[key] = (run, e)
    configs: dict[tuple, dict[int, tuple[int, dict]]] = {}
    for key, val in latest.items():
        configs.setdefault(key[:-1], {})[key[-1]] = val
    out = []
    for cfg in sorted(configs, key=lambda c: (list(CHIP).index(c[0]), c[2], c[3], c[6], c[7])):
        by_conc = configs[cfg]
        pick = [c for c in CONCS if c in by_conc]
        if max(by_conc) not in pick:
            pick.append(max(by_conc))
        out.extend(by_conc[c] for c in pick)
    return out


def harness_of(flags: str, conc: int) -> str:
    """The row's harness: the HTTP client ("api"), behind SGLang's admission gate where the
    launch flags set one (engine.HARNESS_ADMISSION_GATES): --scheduler-recv-interval N
    polls for new requests every N decode steps; --num-continuous-decode-steps N is stated
    as launched, though no loop of the rows' SGLang reads it (no gate there)."""
    if "--scheduler-recv-interval 10 (30 at CONC >= 16)" in flags:
        return f"api-sglang-recv-{30 if conc >= 16 else 10}"
    if "--scheduler-recv-interval 10 " in flags:
        return "api-sglang-recv-10"
    steps = re.search(r"--num-continuous-decode-steps[= ](\d+)", flags)
    if steps and int(steps.group(1)) > 1:
        return f"api-sglang-decode-steps-{steps.group(1)}"
    return "api"


def moe_backend_of(flags: str) -> str:
    """The row's MoE backend: "trtllm-gen" where the launch flags pick SGLang's
    --moe-runner-backend flashinfer_trtllm (FlashInfer's TRT-LLM-Gen fused MoE:
    trtllm_fp8_block_scale_moe / trtllm_fp4_block_scale_moe), "" for the engine's default."""
    return "trtllm-gen" if "--moe-runner-backend flashinfer_trtllm" in flags else ""


def _run_and_client(run: int, e: dict, framework: str, prompts: int, why: str) -> list[str]:
    """The notes' run, entry, published figures and client, as every row states them."""
    tp, ep, isl, osl, conc = e["tp"], e["ep"], e["isl"], e["osl"], e["conc"]
    url = f"https://github.com/InferenceMAX/InferenceMAX/actions/runs/{run}"
    lin, lout = mean_length(isl, RATIO), mean_length(osl, RATIO)
    lengths = f"lengths/inferencemax-random-{isl}-{osl}-r{RATIO}.csv"
    return [
        "SemiAnalysis InferenceMAX (now InferenceX) DeepSeek-R1-0528 single-node run,",
        f"GitHub Actions run {run} ({url}); its agg_bmk.json artifact as copied by a third",
        f"party into {MANTILE}@{MANTILE_COMMIT[:8]} reconcile/sources/inferencemax/raw/",
        f"run_{run}/agg_bmk.json (a third-party copy of the official artifact).",
        f"Entry: hw {e['hw']}, framework {framework}, image {e['image']}, model {e['model']},",
        f"precision {e['precision']}, tp {tp}, ep {ep}, dp_attention {e['dp_attention']},",
        f"disagg false, spec_decoding none, isl {isl}, osl {osl}, conc {conc}.",
        f"Published: output_tput_per_gpu {e['output_tput_per_gpu']:.2f} tok/s,",
        f"tput_per_gpu {e['tput_per_gpu']:.2f}, median/p99 TTFT",
        f"{e['median_ttft'] * 1e3:.1f}/{e['p99_ttft'] * 1e3:.1f} ms, median/p99 TPOT",
        f"{e['median_tpot'] * 1e3:.2f}/{e['p99_tpot'] * 1e3:.2f} ms,",
        f"median E2EL {e['median_e2el']:.2f} s.",
        "Client (benchmarks/benchmark_lib.sh): kimbochen/bench_serving",
        "benchmark_serving.py --backend vllm --dataset-name random",
        f"--random-input-len {isl} --random-output-len {osl} --random-range-ratio {RATIO}",
        "(benchmark-tmpl.yml's default; run-sweep.yml passes none)",
        f"--num-prompts {prompts} ({why}) --max-concurrency {conc}",
        f"--request-rate inf --ignore-eos: a closed loop of {conc} clients; lengths uniform",
        f"integers in [{int(isl * RATIO)}, {isl}] and [{int(osl * RATIO)}, {osl}]",
        f"(lengths: {lengths}, see lengths/README.md; input_len/output_len state their",
        f"means {lin}/{lout}).",
    ]


def sglang_entry(run: int, e: dict) -> tuple[list[str], dict]:
    """One SGLang entry's notes (before the metric) and its engine's columns."""
    s = SETUPS.get((e["hw"], e["precision"], e["tp"])) or SETUPS[(e["hw"], e["precision"])]
    tp, ep, isl, osl, conc = e["tp"], e["ep"], e["isl"], e["osl"], e["conc"]
    seqs = s["seqs"] or (512 if (isl, osl) == (1024, 1024) else 256)
    tokens = s["tokens"](isl, osl, conc)
    prompts = (
        _b200_prompts(e["model"], osl, conc)
        if e["hw"] == "b200"
        else (conc * (20 if osl == 8192 else 50) if e["hw"] == "mi355x" else conc * 10)
    )
    plan = f"tp={tp}" + (f",ep={ep}" if ep > 1 else "")
    moe = f", MoE experts over {ep} ranks (--ep-size {ep})" if ep > 1 else ", MoE TP (ep 1)"
    m = e["model"]
    share = stated_memory_fraction(s["flags"])
    if not share:  # every setup states one
        raise SystemExit(f"no --mem-fraction-static in {s['flags']!r}")
    parts = [
        *_run_and_client(run, e, "sglang", prompts, s["prompts_why"]),
        f"Server: python3 -m sglang.launch_server ({IMX} {s['script']} at",
        f"{s['commit'][:9]}, the commit that ran this image): {s['flags']}.",
        f"Engine limits: max_num_seqs {seqs} ({s['seqs_why']});",
        f"max_num_tokens {tokens} ({s['tokens_why']}); KV {s['kv']} ({s['kv_why']});",
        f"memory_fraction {share} (--mem-fraction-static as launched).",
        f"Plan {plan}: attention TP {tp}{moe}, no attention DP.",
        CHECKPOINT[m],
        "Date: the run's day, interpolated from its run id between five runs whose",
        "creation times mantile records (reconcile/by_model/openai_GPT-OSS-120B/",
        "inferencemax.csv; +-1 day); the image's SGLang release is later than every dated",
        "SGLang default chipwise applies (2025-09-27).",
        "Selection: every single-node sglang DeepSeek-R1 config's latest entry at",
        "concurrency 4, 16, 64 and the config's largest (docs/performance.md).",
        "Scored before any model change on 2026-12-06.",
    ]
    return parts, {
        "kv_dtype": s["kv"],
        "max_num_seqs": seqs,
        "max_num_tokens": tokens,
        "engine": "sglang",
        "num_requests": prompts,
        "harness": harness_of(s["flags"], conc),
        "memory_fraction": share,
        "moe_backend": moe_backend_of(s["flags"]),
    }


# AMD's ATOM (chipwise engine "atom" since 2026-12-06): the MI355X entries of run 21012127808
# (2026-01-14, image rocm/atom:...-atom0.1.1-MI350x), launched by
# benchmarks/dsr1_{fp4,fp8}_mi355x_atom_slurm.sh at this InferenceX commit (the last before
# the run), whose only ATOM flags are these; NUM_PROMPTS from runners/launch_mi355x-amd.sh
ATOM_COMMIT = "2be3de60fdfd4a7bc9ebecf66decb0c24a3377cc"
ATOM_FLAGS = (
    "python3 -m atom.entrypoints.openai_server -tp $TP --kv_cache_dtype fp8 --block-size 16 "
    "(--max-model-len 10240 unless ISL/OSL is 1024/1024; --enable-expert-parallel only at "
    "EP > 1); no --max-num-seqs, --max-num-batched-tokens or --gpu-memory-utilization: "
    "ATOM's defaults 512, 16384 and 0.9 (ROCm/ATOM atom/model_engine/arg_utils.py at "
    "8ccc65c0, 2026-01-14)"
)


def atom_entry(run: int, e: dict) -> tuple[list[str], dict]:
    """One ATOM entry's notes (before the metric) and its engine's columns."""
    tp, ep, osl, conc = e["tp"], e["ep"], e["osl"], e["conc"]
    prompts = conc * (20 if osl == 8192 else 50)
    plan = f"tp={tp}" + (f",ep={ep}" if ep > 1 else "")
    m = e["model"]
    script = f"benchmarks/dsr1_{e['precision']}_mi355x_atom_slurm.sh"
    parts = [
        *_run_and_client(
            run, e, "atom (AMD's ATOM engine)", prompts, f"{P50_20} (runners/launch_mi355x-amd.sh)"
        ),
        f"Server ({IMX} {script} at {ATOM_COMMIT[:9]}): {ATOM_FLAGS}.",
        f"Plan {plan}: attention TP {tp}, MoE TP (ep {ep}), no attention DP.",
        CHECKPOINT[m],
        "Date: the run's day, interpolated from its run id as for the SGLang rows.",
        "Selection: every single-node atom DeepSeek-R1 config's latest entry at",
        "concurrency 4, 16, 64 and the config's largest, the SGLang rows' rule; left out",
        "until 2026-12-06 (no ATOM engine in chipwise), then appended after IMX-D-246 and",
        "first scored before any tuning.",
    ]
    return parts, {
        "kv_dtype": "fp8",
        "max_num_seqs": "",
        "max_num_tokens": "",
        "engine": "atom",
        "num_requests": prompts,
        "harness": "api",
        "memory_fraction": "",
    }


def _common_columns(run: int, e: dict) -> dict:
    """The columns every row of an entry states, whatever its engine."""
    tp, isl, osl = e["tp"], e["isl"], e["osl"]
    return {
        "workload": WORKLOAD[e["model"]],
        "chips": tp,
        "input_len": mean_length(isl, RATIO),
        "output_len": mean_length(osl, RATIO),
        "plan": f"tp={tp}" + (f",ep={e['ep']}" if e["ep"] > 1 else ""),
        "source": f"github:{MANTILE}@{MANTILE_COMMIT}:{RAW}/run_{run}/agg_bmk.json",
        "url": f"https://github.com/InferenceMAX/InferenceMAX/actions/runs/{run}",
        "concurrency": e["conc"],
        "date": run_day(run),
        "lengths": f"lengths/inferencemax-random-{isl}-{osl}-r{RATIO}.csv",
    }


def main() -> None:
    raw = Path(sys.argv[1])
    w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    n = 0
    # the SGLang rows first, then ATOM's (appended: no SGLang row's id moves)
    for framework, entry in (("sglang", sglang_entry), ("atom", atom_entry)):
        for run, e in select(raw, framework):
            parts, cols = entry(run, e)
            base = " ".join(parts).replace("/ inferencemax", "/inferencemax")
            base = base.replace("raw/ run_", "raw/run_")
            for metric, field, what in METRICS:
                n += 1
                row = {
                    "id": f"IMX-D-{n:03d}",
                    "phase": "infer",
                    "chip": CHIP[e["hw"]],
                    "precision": e["precision"],
                    "metric": metric,
                    "value": f"{e[field]:.6g}",
                    "usable": "yes",
                    "notes": base + f" This row: {what}.",
                    "load": "concurrency",
                }
                w.writerow({**row, **_common_columns(run, e), **cols})


if __name__ == "__main__":
    main()
