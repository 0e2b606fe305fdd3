"""scan_project end to end on the fixture projects, plus the walk's limits and skips."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chipwise.compat import ScanLimits, ScanReport, scan_project
from chipwise.errors import ScanError

FIXTURES = Path(__file__).parent / "fixtures"
PROJECTS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
R, C, D = "runs", "runs-with-changes", "does-not-run"


def _verdicts(report: ScanReport) -> tuple[str, ...]:
    return tuple(p.verdict for p in report.platforms)


def _places(report: ScanReport, key: str) -> set[str]:
    return {f.location for f in report.findings if f.key == key}


# (nvidia-cuda, amd-rocm, intel-xpu, google-tpu)
@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ("cuda_ext", (R, C, C, D)),  # .cu kernel: hipify, SYCL port, Pallas rewrite
        ("jax_proj", (C, C, C, C)),  # a Python branch on a traced value fails under jit
        ("tf_proj", (R, C, C, R)),
        ("cupy_proj", (R, C, D, D)),
        ("triton_proj", (R, R, C, D)),
        ("opengl_proj", (R, R, R, D)),
        ("req_include", (R, C, D, D)),
        ("conda_env", (R, C, D, D)),
    ],
)
def test_fixture_verdicts(project: str, expected: tuple[str, ...]) -> None:
    assert _verdicts(scan_project(FIXTURES / project)) == expected


def test_cuda_extension_project() -> None:
    r = scan_project(FIXTURES / "cuda_ext")
    assert _places(r, "cuda-kernel") == {"csrc/kernel.cu:4", "setup.py:19"}
    assert _places(r, "torch-cuda-api") == {f"train.py:{n}" for n in (16, 17, 18, 19)}
    assert "setup.py:17" in _places(r, "torch")  # install_requires, read from the AST
    assert r.custom_kernels == ("cuda-kernel",)
    assert r.frameworks == ("pytorch",)
    tpu = r.platform("google-tpu")
    kernel = next(i for i in tpu.issues if i.key == "cuda-kernel")
    assert kernel.porting.startswith("rewrite in Pallas") and kernel.effort == "large"
    rocm = r.platform("amd-rocm")
    assert [i.key for i in rocm.issues] == ["cuda-kernel"]
    assert rocm.issues[0].porting.startswith("hipify")
    assert "setup.py" in r.dependency_files


def test_jax_project_flags_only_data_dependent_branches() -> None:
    r = scan_project(FIXTURES / "jax_proj")
    assert _places(r, "jax-traced-control-flow") == {
        "src/jax_demo/model.py:20",
        "src/jax_demo/model.py:37",
    }
    assert r.frameworks == ("jax",)
    assert r.tpu_ready_signals == ("tpu-build-pin",)  # the optional 'tpu' extra
    assert r.uses_cuda_specific_libs == ()


def test_pure_jax_runs_on_tpu(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("jax[tpu]>=0.4.30\nflax\noptax\n")
    (tmp_path / "train.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
        "    return jnp.where(x > 0, x, 0.0)\n"
    )
    r = scan_project(tmp_path)
    assert r.verdict("google-tpu") == R
    assert r.verdict("nvidia-cuda") == R
    assert r.tpu_ready_signals == ("tpu-build-pin",)


def test_plain_pytorch_needs_changes_on_tpu_only(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("import torch\n\nnet = torch.nn.Linear(4, 4)\n")
    r = scan_project(tmp_path)
    assert _verdicts(r) == (R, R, R, C)
    (issue,) = r.platform("google-tpu").issues
    assert issue.key == "torch" and "torch_xla" in issue.porting


def test_tensorflow_project_is_tpu_ready_with_a_tpu7x_note() -> None:
    r = scan_project(FIXTURES / "tf_proj")
    assert r.tpu_ready_signals == ("tpu-strategy",)
    assert _places(r, "tpu-strategy") == {"train.py:14", "train.py:16", "train.py:17"}
    assert any("TPU7x" in n for n in r.platform("google-tpu").notes)
    assert r.unclassified_packages == ("tensorflow-datasets",)


def test_cupy_project() -> None:
    r = scan_project(FIXTURES / "cupy_proj")
    assert r.uses_cuda_specific_libs == ("cupy",)
    assert r.custom_kernels == ("cupy-raw-kernel",)
    assert _places(r, "cupy-raw-kernel") == {"sim.py:15"}
    assert _places(r, "fp64-host") == {"sim.py:24"}
    assert r.needs_fp64 is False  # NumPy float64 on the host is not accelerator fp64
    tpu_cupy = next(i for i in r.platform("google-tpu").issues if i.key == "cupy")
    assert tpu_cupy.porting.startswith("jax.numpy")


def test_triton_project() -> None:
    r = scan_project(FIXTURES / "triton_proj")
    assert _places(r, "triton-kernel") == {"kernels.py:17"}
    assert r.custom_kernels == ("triton-kernel",)
    assert r.uses_cuda_specific_libs == ("triton",)
    assert [i.key for i in r.platform("intel-xpu").issues] == ["torch-cuda-api"]


def test_opengl_project() -> None:
    r = scan_project(FIXTURES / "opengl_proj")
    assert r.needs_graphics is True
    assert _places(r, "graphics-api") == {
        "render.py:12",
        "render.py:13",
        "requirements.txt:1",
        "requirements.txt:2",
        "shaders/common.glsl:1",
        "shaders/mesh.frag:1",
        "shaders/mesh.vert:1",
    }
    (issue,) = r.platform("google-tpu").issues
    assert issue.key == "graphics-api" and issue.effort == "large"


def test_requirements_includes_are_followed_once_with_file_and_line() -> None:
    r = scan_project(FIXTURES / "req_include")
    assert _places(r, "flash-attn") == {"requirements/base.txt:3"}
    assert _places(r, "bitsandbytes") == {"requirements/base.txt:2"}
    assert _places(r, "cuda-build-pin") == {"requirements.txt:2", "requirements.txt:4"}
    assert r.dependency_files == ("requirements.txt", "requirements/base.txt")
    (metal,) = [f for f in r.findings if f.key == "jax-metal"]
    assert metal.optional and metal.condition == 'marker: sys_platform == "darwin"'
    assert r.uses_cuda_specific_libs == ("bitsandbytes", "flash-attn")
    assert r.files_scanned == 2


def test_conda_environment_with_a_pip_section() -> None:
    r = scan_project(FIXTURES / "conda_env")
    assert _places(r, "torch") == {"environment.yml:8"}
    assert _places(r, "cuda-build-pin") == {"environment.yml:8", "environment.yml:9"}
    assert _places(r, "flash-attn") == {"environment.yml:13"}


@pytest.mark.parametrize("project", PROJECTS)
def test_every_finding_points_at_a_real_line_of_a_real_file(project: str) -> None:
    root = FIXTURES / project
    r = scan_project(root)
    assert r.findings
    for f in r.findings:
        path = root / f.file
        assert path.is_file(), f.file
        n_lines = len(path.read_bytes().splitlines())
        assert 1 <= f.line <= max(n_lines, 1), f.location


def test_the_report_is_frozen() -> None:
    r = scan_project(FIXTURES / "tf_proj")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.needs_fp64 = True  # type: ignore[misc]


def test_an_unknown_platform_is_a_scan_error() -> None:
    r = scan_project(FIXTURES / "tf_proj")
    with pytest.raises(ScanError, match="'gpu'"):
        r.platform("gpu")  # type: ignore[arg-type]


def test_a_missing_path_is_a_scan_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ScanError, match="no-such-project"):
        scan_project(tmp_path / "no-such-project")


def test_a_file_chipwise_does_not_read_is_a_scan_error(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("hello")
    with pytest.raises(ScanError, match=r"notes\.md"):
        scan_project(tmp_path / "notes.md")


def test_a_single_requirements_file_can_be_scanned(tmp_path: Path) -> None:
    (tmp_path / "reqs-gpu.txt").write_text("xformers\n")
    r = scan_project(tmp_path / "reqs-gpu.txt")
    assert _places(r, "xformers") == {"reqs-gpu.txt:1"}


def test_environments_caches_and_vcs_folders_are_skipped(tmp_path: Path) -> None:
    for d in (".git", "node_modules", "lib/site-packages", "build", "myenv", "pkg.egg-info"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "x.py").write_text("import flash_attn\n")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "app.py").write_text("import numpy\n")
    r = scan_project(tmp_path)
    assert r.findings == ()
    assert r.files_scanned == 1
    assert any("no accelerator framework" in n for n in r.notes)


def test_big_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("import flash_attn\n" + "#" * 500 + "\n")
    (tmp_path / "small.py").write_text("import torch\n")
    r = scan_project(tmp_path, limits=ScanLimits(max_file_bytes=100))
    assert {f.key for f in r.findings} == {"torch"}
    assert any("skipped 1 file(s) over 100 bytes: big.py" in n for n in r.notes)


def test_the_file_count_cap_stops_the_scan_with_a_note(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("import torch\n")
    r = scan_project(tmp_path, limits=ScanLimits(max_files=2))
    assert r.files_scanned == 2
    assert "stopped after 2 files; the rest was not scanned" in r.notes


def test_limits_must_be_positive() -> None:
    with pytest.raises(ScanError, match="max_files=0"):
        ScanLimits(max_files=0)


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("import flash_attn\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "linked.py").symlink_to(outside / "evil.py")
    (project / "linked_dir").symlink_to(outside, target_is_directory=True)
    r = scan_project(project)
    assert r.findings == ()
    assert "skipped 1 symbolic link(s)" in r.notes


def test_an_include_outside_the_project_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("flash-attn\n")
    project = tmp_path / "p"
    project.mkdir()
    (project / "requirements.txt").write_text("-r ../secret.txt\n-r missing.txt\n")
    r = scan_project(project)
    assert r.findings == ()
    assert "requirements.txt:1: -r ../secret.txt is outside the project; not read" in r.notes
    assert "requirements.txt:2: -r missing.txt not found in the project" in r.notes


def test_unparseable_python_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "py2.py").write_text("print 'hello'\n")
    (tmp_path / "escapes.py").write_text('import torch\nx = "\\d"\n')  # warns, still parses
    r = scan_project(tmp_path)
    assert {f.key for f in r.findings} == {"torch"}
    assert "py2.py: not parseable as Python 3 (line 1); skipped" in r.notes
