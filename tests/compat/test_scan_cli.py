"""``chipwise scan`` through the CLI: tables, --json, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chipwise.cli import app
from chipwise.compat import PLATFORMS, scan_project

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def test_scan_verbose_prints_a_table_per_platform_and_the_findings() -> None:
    args = ["scan", str(FIXTURES / "cuda_ext"), "--verbose"]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("Google TPU", "does-not-run", "AMD ROCm: runs-with-changes", "findings",
                 "csrc/kernel.cu:4", "rewrite in Pallas"):  # fmt: skip
        assert text in result.output


def test_scan_json_is_parsable_and_matches_the_library() -> None:
    project = FIXTURES / "triton_proj"
    result = runner.invoke(app, ["scan", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    report = scan_project(project)
    assert data["schema_version"] == 1
    assert [p["platform"] for p in data["platforms"]] == list(PLATFORMS)
    assert [p["verdict"] for p in data["platforms"]] == [p.verdict for p in report.platforms]
    assert data["custom_kernels"] == ["triton-kernel"]
    kernel = next(f for f in data["findings"] if f["key"] == "triton-kernel")
    assert (kernel["file"], kernel["line"]) == ("kernels.py", 17)
    assert [i["platform"] for i in kernel["impacts"]] == list(PLATFORMS)
    assert set(data) >= {"frameworks", "uses_cuda_specific_libs", "needs_fp64", "needs_graphics",
                         "tpu_ready_signals", "knowledge_last_checked"}  # fmt: skip


def test_a_bad_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["scan", str(missing)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: cannot scan") and "nowhere" in lines[0]


FIVE_FILE_CUDA_PROJECT = {
    "requirements.txt": "torch\nflash-attn\nbitsandbytes\nnumpy\n",
    "csrc/fused.cu": "__global__ void fused(float* x) { x[threadIdx.x] *= 2.0f; }\n",
    "setup.py": (
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(ext_modules=[CUDAExtension('fused', ['csrc/fused.cu'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n"
    ),
    "model.py": (
        "import torch\nimport bitsandbytes as bnb\nfrom flash_attn import flash_attn_func\n"
        "layer = bnb.nn.Linear4bit(64, 64)\n"
    ),
    "train.py": (
        "import torch\nfrom model import layer\nx = torch.ones(8, device='cuda')\n"
        "torch.cuda.synchronize()\nprint(torch.cuda.memory_allocated())\n"
    ),
}


def test_scan_of_a_five_file_cuda_project_fits_a_screen_and_names_each_package_once(
    tmp_path: Path,
) -> None:
    for name, text in FIVE_FILE_CUDA_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    result = runner.invoke(app, ["scan", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 40, result.output
    changes = lines[lines.index("What to change (each once; --verbose for details):") + 1 :]
    heads = [line for line in changes if line.startswith("  ") and not line.startswith("    ")]
    titles = [h.split(" at ")[0].strip() for h in heads if " at " in h]
    assert len(titles) == len(set(titles)) >= 3, result.output  # kernel, flash-attn, bnb, ...
    verbose = runner.invoke(app, ["scan", str(tmp_path), "--verbose"], env={"COLUMNS": "80"})
    assert len(verbose.output.splitlines()) > len(lines)
