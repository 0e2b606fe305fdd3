"""Write the InferenceMAX gpt-oss-120b validation rows (``measurements-serving-inferencemax.csv``).

    python benchmarks/inferencemax_rows.py RAW_DIR INFERENCEX_GIT_DIR OUT.csv

``RAW_DIR`` holds ``run_<id>/agg_bmk.json``: the official artifacts of InferenceMAX's GitHub
Actions runs (SemiAnalysis, now InferenceX), as copied into ``gminneci/mantile`` at commit
``72ff84eb`` under ``reconcile/sources/inferencemax/raw/``. ``INFERENCEX_GIT_DIR`` is a clone of
``SemiAnalysisAI/InferenceX`` (its launch scripts are read at each run's date and quoted in the
notes; the flags below are what they set and this script checks they are still there).

Selection (mechanical, stated in docs/performance.md): gpt-oss entries with ``disagg`` false,
``spec_decoding`` none, single node, for hw b200 (vLLM), b200-trt (TensorRT-LLM), h100 and h200
(vLLM) and mi355x (ATOM, engine "atom" since 2026-12-06; usable=no before). For each (hw, framework,
tp, ep, dp_attention, isl, osl, concurrency) the entry of the latest run (largest run id) that
has it; per (hw, framework, tp, ep, dp_attention, isl, osl) the concurrencies in ``CONCS`` that
it has plus its largest; per point three rows: output tokens/s of the deployment
(``output_tput_per_gpu`` x the GPUs), median TPOT, median TTFT.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from random_lengths import mean_length

CONCS = (4,)  # with each config's largest: the two ends of its curve
ENGINES = {"b200": "vllm", "b200-trt": "trt", "h100": "vllm", "h200": "vllm", "mi355x": "atom"}
CHIPS = {"b200": "b200", "b200-trt": "b200", "h100": "h100-sxm", "h200": "h200-sxm",
         "mi355x": "mi355x"}  # fmt: skip
GPU_NAMES = {"b200": "NVIDIA B200 180GB", "b200-trt": "NVIDIA B200 180GB",
             "h100": "NVIDIA H100 80GB (SXM)", "h200": "NVIDIA H200 141GB (SXM)",
             "mi355x": "AMD Instinct MI355X 288GB"}  # fmt: skip
# the runs' createdAt (GitHub Actions), as gminneci/mantile's extraction recorded them
# (reconcile/by_model/openai_GPT-OSS-120B/inferencemax.csv, columns benchmark_date, run_id)
RUN_TIMES = {
    20308883467: "2025-12-17T15:55:33Z",
    20667906037: "2026-01-02T22:24:09Z",
    20764588467: "2026-01-06T22:51:14Z",
    20786863188: "2026-01-07T15:36:44Z",
    21012127808: "2026-01-14T22:27:36Z",
}
MANTILE = "gminneci/mantile@72ff84ebfd56ee0b15bd17d7d49a70fbb4e50256"
MANTILE_RAW = "reconcile/sources/inferencemax/raw"
LENGTH_MEANS = {n: mean_length(n, 0.8) for n in (1024, 8192)}  # 921.5 -> 922, 7372.5 -> 7373
METRICS = (
    ("output_tokens_per_s", "output tokens/s of the deployment (output_tput_per_gpu x {gpus})"),
    ("tpot_p50_s", "median TPOT in seconds (median_tpot)"),
    ("ttft_p50_s", "median TTFT in seconds (median_ttft)"),
)
COLUMNS = [
    "id",
    "workload",
    "phase",
    "chip",
    "chips",
    "precision",
    "seq_len",
    "global_batch",
    "batch",
    "input_len",
    "output_len",
    "plan",
    "metric",
    "value",
    "usable",
    "notes",
    "source",
    "url",
    "scale_out_bytes_per_s_per_chip",
    "load",
    "concurrency",
    "rps",
    "input_len_std",
    "output_len_std",
    "kv_dtype",
    "max_num_seqs",
    "max_num_tokens",
    "prefix_hit_rate",
    "ttft_p99_target_s",
    "tpot_p99_target_s",
    "date",
    "engine",
    "lengths",
    "num_requests",
    "harness",
    "async_scheduling",
    "moe_backend",
    "memory_fraction",
]

# what each launch script sets, checked against the script at the run's commit
SCRIPTS = {
    "b200": "benchmarks/gptoss_fp4_b200_docker.sh",
    "b200-trt": "benchmarks/gptoss_fp4_b200_trt_slurm.sh",
    "h100": "benchmarks/gptoss_fp4_h100_slurm.sh",
    "h200": "benchmarks/gptoss_fp4_h200_slurm.sh",
    "mi355x": "benchmarks/gptoss_fp4_mi355x_atom_slurm.sh",
}
EXPECT = {
    "b200": ("kv-cache-dtype: fp8", "async-scheduling: true", "no-enable-prefix-caching: true",
             "max-num-batched-tokens: 8192", "--max-num-seqs 512", "--gpu-memory-utilization 0.9",
             "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"),
    "b200-trt": ("dtype: fp8", "enable_block_reuse: false", "free_gpu_memory_fraction: 0.85",
                 "max_batch_size: $CONC", "stream_interval: 20", "MAX_NUM_TOKENS=20000",
                 "--max_batch_size 512", 'MOE_BACKEND="TRTLLM"', "enable_balance: true",
                 "num_postprocess_workers: 4"),
    "h100": ("async-scheduling: true", "no-enable-prefix-caching: true",
             "max-num-batched-tokens: 8192", "--max-num-seqs=$CONC",
             "--gpu-memory-utilization=0.9", "VLLM_MXFP4_USE_MARLIN=1"),
    "h200": ("async-scheduling: true", "no-enable-prefix-caching: true",
             "max-num-batched-tokens: 8192", "--max-num-seqs $CONC",
             "--gpu-memory-utilization 0.9", "VLLM_MXFP4_USE_MARLIN=1"),
    "mi355x": ("atom.entrypoints.openai_server", "--kv_cache_dtype fp8"),
}  # fmt: skip
# the other launcher's variant of the same job (docker vs slurm nodes): must set the same flags
ALT_SCRIPTS = {
    "b200": "benchmarks/gptoss_fp4_b200_slurm.sh",
    "b200-trt": "benchmarks/gptoss_fp4_b200_trt_docker.sh",
    "h100": "benchmarks/gptoss_fp4_h100_docker.sh",
}
# the memory share a launch script states: vLLM's --gpu-memory-utilization, TensorRT-LLM's
# free_gpu_memory_fraction, SGLang's --mem-fraction-static
_MEMORY_FLAG = re.compile(
    r"(?:gpu-memory-utilization|free_gpu_memory_fraction|mem-fraction-static)[:= ]+(\d*\.\d+)"
)


def stated_memory_fraction(flags: str) -> str:
    """The memory share ``flags`` state ("" = none: the engine's default)."""
    found = _MEMORY_FLAG.search(flags)
    return found.group(1) if found else ""


NUM_PROMPTS = {  # where --num-prompts comes from: 10 x concurrency for gpt-oss everywhere
    "b200": ("runners/launch_b200-dgxc.sh", "export NUM_PROMPTS=$(( CONC * 10 ))"),
    "b200-trt": ("benchmarks/gptoss_fp4_b200_trt_slurm.sh", "--num-prompts $(( $CONC * 10 ))"),
    "h100": ("benchmarks/gptoss_fp4_h100_slurm.sh", "--num-prompts $(( $CONC * 10 ))"),
    "h200": ("benchmarks/gptoss_fp4_h200_slurm.sh", "--num-prompts $(( $CONC * 10 ))"),
    "mi355x": ("runners/launch_mi355x-amd.sh", "export NUM_PROMPTS=$(( CONC * 10 ))"),
}


def git_show(repo: Path, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip


def commit_before(repo: Path, when: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "-1", f"--before={when}", "HEAD"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def select(raw: Path) -> list[tuple[int, dict]]:
    best: dict[tuple, tuple[int, dict]] = {}
    for f in sorted(raw.glob("run_*/agg_bmk.json")):
        run = int(re.fullmatch(r"run_(\d+)", f.parent.name).group(1))  # type: ignore[union-attr]
        for e in json.loads(f.read_text()):
            if "gpt-oss" not in e["model"] or ENGINES.get(e["hw"]) != e["framework"]:
                continue
            if e["disagg"] or e["spec_decoding"] != "none" or e.get("is_multinode"):
                continue
            k = (e["hw"], e["framework"], e["tp"], e["ep"], str(e["dp_attention"]), e["isl"],
                 e["osl"], e["conc"])  # fmt: skip
            if k not in best or run > best[k][0]:
                best[k] = (run, e)
    configs: dict[tuple, dict[int, tuple[int, dict]]] = {}
    for k, v in best.items():
        configs.setdefault(k[:7], {})[k[7]] = v
    order = {"b200": 0, "b200-trt": 1, "h100": 2, "h200": 3, "mi355x": 4}
    out = []
    for cfg in sorted(configs, key=lambda c: (order[c[0]], *c[2:])):
        concs = configs[cfg]
        for c in sorted({c for c in concs if c in CONCS} | {max(concs)}):
            out.append(concs[c])
    return out


def plan_of(e: dict) -> str:
    if str(e["dp_attention"]).lower() == "true":
        return f"tp={e['tp']},ep={e['ep']},adp=1" if e["ep"] > 1 else f"tp={e['tp']},adp=1"
    return f"tp={e['tp']}"


def notes(e: dict, run: int, rev: str, metric_text: str) -> str:
    hw, tp, conc = e["hw"], e["tp"], e["conc"]
    url = f"https://github.com/InferenceMAX/InferenceMAX/actions/runs/{run}"
    head = (
        f"SemiAnalysis InferenceMAX (now InferenceX) official run artifact agg_bmk.json of GitHub "
        f"Actions run {run} ({url}, created {RUN_TIMES[run]}), a third-party copy in {MANTILE} "
        f"{MANTILE_RAW}/run_{run}/agg_bmk.json (its extract_inferencemax_data.py fetches the run's "
        "results_bmk artifact with `gh run download`; not checked byte for byte against "
        "GitHub, whose artifacts need a login). "
        f"Entry: hw {hw}, framework {e['framework']}, image {e['image']}, model {e['model']}, "
        f"precision fp4, isl {e['isl']}, osl {e['osl']}, tp {tp}, ep {e['ep']}, dp_attention "
        f"{e['dp_attention']}, conc {conc}, disagg false, spec_decoding none; "
        f"{GPU_NAMES[hw]} x {tp}. Entry values: output_tput_per_gpu "
        f"{e['output_tput_per_gpu']:.2f} tok/s, median TPOT {e['median_tpot'] * 1e3:.2f} ms, "
        f"median TTFT {e['median_ttft'] * 1e3:.1f} ms (p99 TTFT {e['p99_ttft'] * 1e3:.1f} ms, "
        f"median e2el {e['median_e2el']:.2f} s). This row: {metric_text}. "
    )
    client = (
        "Client (InferenceX benchmarks/benchmark_lib.sh at the run's commit "
        f"{rev[:10]}): kimbochen/bench_serving benchmark_serving.py --dataset-name random "
        f"--random-input-len {e['isl']} --random-output-len {e['osl']} --random-range-ratio 0.8 "
        f"(.github/workflows/benchmark-tmpl.yml default; no sweep passes another) --num-prompts "
        f"{10 * conc} (10 x conc: {NUM_PROMPTS[hw][0]}) --max-concurrency {conc} --request-rate "
        "inf --ignore-eos: a closed loop of conc clients, every request generating its drawn "
        "length; lengths uniform integers on [int(0.8 L), L] per axis "
        f"(lengths/inferencemax-random-{e['isl']}-{e['osl']}-r0.8.csv, means "
        f"{LENGTH_MEANS[e['isl']]} / {LENGTH_MEANS[e['osl']]} as input_len/output_len; "
        "lengths/README.md). TTFT/TPOT as the client measures them through the HTTP API. "
    )
    if hw in ("b200", "h100", "h200"):
        path = SCRIPTS[hw]
        alt = f"; {ALT_SCRIPTS[hw]} sets the same" if hw in ALT_SCRIPTS else ""
        seqs = "512" if hw == "b200" else f"{conc} (--max-num-seqs $CONC)"
        kv = (
            "kv-cache-dtype fp8"
            if hw == "b200"
            else "no kv-cache-dtype (vLLM 'auto' = bf16 for this checkpoint)"
        )
        extra = (
            "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 (FlashInfer MXFP4 x MXFP8 MoE), "
            "fuse_allreduce_rms"
            if hw == "b200"
            else "VLLM_MXFP4_USE_MARLIN=1 (Marlin weight-only MXFP4 MoE: W4A16 on Hopper)"
        )
        engine = (
            f"Engine ({path} at {rev[:10]}{alt}): vllm serve --tensor-parallel-size {tp} "
            f"--max-num-seqs {seqs}, max-num-batched-tokens 8192, {kv}, async-scheduling true, "
            f"no-enable-prefix-caching, gpu-memory-utilization 0.9, {extra}; engine vLLM "
            f"{e['image'].split(':')[-1]} (image tag); date = the run's date. "
        )
    elif hw == "b200-trt":
        adp = (
            " enable_attention_dp true with attention_dp_config enable_balance true (timeout and "
            "batching-wait iterations not set: TensorRT-LLM's defaults 50 and 10; harness "
            "api-trtllm-adp-50-10, the API client behind that balance gate, since 2026-12-06);"
            if str(e["dp_attention"]).lower() == "true"
            else " enable_attention_dp false;"
        )
        engine = (
            f"Engine ({SCRIPTS[hw]} at {rev[:10]}; {ALT_SCRIPTS[hw]} sets the same): "
            f"trtllm-serve --backend pytorch --tp_size {tp} "
            f"--ep_size {e['ep']} --max_batch_size 512 --max_num_tokens 20000, extra options: "
            f"kv_cache_config dtype fp8, enable_block_reuse false, free_gpu_memory_fraction 0.85; "
            f"cuda_graph_config max_batch_size {conc} (= conc) with padding; moe_config backend "
            f"TRTLLM; stream_interval 20; num_postprocess_workers 4;{adp} engine TensorRT-LLM "
            f"{e['image'].split(':')[-1]} (image tag); date = the run's date. "
        )
    else:
        engine = (
            f"Engine ({SCRIPTS[hw]} at {rev[:10]}): AMD ATOM (python3 -m "
            f"atom.entrypoints.openai_server -tp {tp} --kv_cache_dtype fp8 --block-size 16), "
            f"image {e['image']}; ATOM_GPT_OSS_MODEL=1 (prefill attention's block tables for "
            "the sink/sliding-window layers); no --max-num-seqs, --max-num-batched-tokens or "
            "--gpu-memory-utilization: ATOM's defaults 512, 16384 and 0.9 (atom/model_engine/"
            "arg_utils.py at ROCm/ATOM@8ccc65c0, 2026-01-14; chipwise engine 'atom'); decode "
            "steps in CUDA graphs of 1-256 sequences. Usable=no until 2026-12-06, when chipwise "
            "gained the ATOM engine (whole prompts in prefill-only steps, vLLM's memory rule, "
            "AITER's fused MoE); first scored then, before any tuning. "
        )
    tail = (
        "openai/gpt-oss-120b: MoE expert weights MXFP4, attention/embeddings bf16. "
        "Selected by the stated rule (docs/performance.md, InferenceMAX rows), scored before any "
        "model change on 2026-12-06."
    )
    return head + client + engine + tail


def rows(raw: Path, repo: Path) -> list[dict[str, str]]:
    out = []
    n = 0
    for run, e in select(raw):
        rev = commit_before(repo, RUN_TIMES[run])
        hw = e["hw"]
        script = git_show(repo, rev, SCRIPTS[hw])
        for flag in EXPECT[hw]:
            if flag not in script:
                raise SystemExit(f"{SCRIPTS[hw]} at {rev}: {flag!r} not found")
        if hw in ALT_SCRIPTS:
            alt = git_show(repo, rev, ALT_SCRIPTS[hw]).replace("=", " ")
            for flag in EXPECT[hw]:
                if flag.replace("=", " ") not in alt and not flag.startswith("--max-num-seqs"):
                    raise SystemExit(f"{ALT_SCRIPTS[hw]} at {rev}: {flag!r} not found")
        src, line = NUM_PROMPTS[hw]
        if line not in git_show(repo, rev, src):
            raise SystemExit(f"{src} at {rev}: {line!r} not found")
        gpus = e["tp"]
        values = {
            "output_tokens_per_s": e["output_tput_per_gpu"] * gpus,
            "tpot_p50_s": e["median_tpot"],
            "ttft_p50_s": e["median_ttft"],
        }
        for metric, text in METRICS:
            n += 1
            vllm = e["framework"] == "vllm"
            out.append({
                "id": f"IMX-{n:03d}", "workload": "gpt-oss-120b", "phase": "infer",
                "chip": CHIPS[hw], "chips": str(gpus), "precision": "fp4",
                "input_len": str(LENGTH_MEANS[e["isl"]]),
                "output_len": str(LENGTH_MEANS[e["osl"]]), "plan": plan_of(e),
                "metric": metric, "value": f"{values[metric]:.6g}",
                "usable": "yes",
                "notes": notes(e, run, rev, text.format(gpus=gpus)),
                "source": f"github:{MANTILE}:{MANTILE_RAW}/run_{run}/agg_bmk.json",
                "url": f"https://github.com/InferenceMAX/InferenceMAX/actions/runs/{run}",
                "load": "concurrency", "concurrency": str(e["conc"]),
                "kv_dtype": "bf16" if hw in ("h100", "h200") else "fp8",
                "max_num_seqs": {"b200": "512", "b200-trt": "512"}.get(hw, str(e["conc"]))
                if hw != "mi355x" else "",
                "max_num_tokens": {"b200-trt": "20000", "mi355x": ""}.get(hw, "8192"),
                "date": RUN_TIMES[run][:10],
                "engine": {"vllm": "vllm", "trt": "trtllm", "atom": "atom"}[e["framework"]],
                "lengths": f"lengths/inferencemax-random-{e['isl']}-{e['osl']}-r0.8.csv",
                "num_requests": str(10 * e["conc"]),
                # the API client, behind TensorRT-LLM's ADP balance where the launch sets it
                "harness": "api-trtllm-adp-50-10"
                if hw == "b200-trt" and str(e["dp_attention"]).lower() == "true" else "api",
                "async_scheduling": "yes" if vllm else "",
                # TRT-LLM-Gen's MXFP4 x MXFP8 MoE: the B200 vLLM runs set
                # VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, the TensorRT-LLM runs moe_config
                # backend TRTLLM; Marlin-MoE: the H100/H200 vLLM runs set
                # VLLM_MXFP4_USE_MARLIN=1 (all read from the launch script, EXPECT above)
                "moe_backend": moe_backend(EXPECT[hw]),
                # read from the flags checked above (ATOM's states none)
                "memory_fraction": stated_memory_fraction(" ".join(EXPECT[hw])),
            })  # fmt: skip
    return out


def moe_backend(flags: tuple[str, ...]) -> str:
    """``Inference.moe_backend`` as a launch script's checked flags pick it: "trtllm-gen"
    for TRT-LLM-Gen's MXFP4 x MXFP8 MoE, "marlin" for vLLM's Marlin-MoE, "" = default."""
    if "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1" in flags or 'MOE_BACKEND="TRTLLM"' in flags:
        return "trtllm-gen"
    if "VLLM_MXFP4_USE_MARLIN=1" in flags:
        return "marlin"
    return ""


def main() -> None:
    raw, repo, dest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    out = rows(raw, repo)
    with dest.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in out:
            writer.writerow({c: r.get(c, "") for c in COLUMNS})
    print(f"{dest}: {len(out)} rows, {sum(r['usable'] == 'yes' for r in out)} usable")


if __name__ == "__main__":
    main()
