"""Project facts come from the compat scan, which reads files and never runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from chipwise.advise import recommend
from chipwise.advise.project import scan_facts

from .factories import FIXTURES, training

# the requests here re-plan the same counts (tests/conftest.py: shared_plans)
pytestmark = pytest.mark.usefixtures("shared_plans")


def test_cuda_kernel_facts_carry_titles_locations_and_tpu_ports() -> None:
    facts = scan_facts(FIXTURES / "cuda_ext")
    assert facts.cuda_specific == ("cuda-kernel",)
    assert facts.cuda_titles == ("custom CUDA kernel",)
    assert facts.blocks("google-tpu") and not facts.blocks("nvidia-cuda")
    tpu = [f for f in facts.findings if f.key == "cuda-kernel" and f.platform == "google-tpu"]
    assert {f.where for f in tpu} == {"csrc/kernel.cu:4", "setup.py:19"}
    assert all("Pallas" in f.porting for f in tpu)


@pytest.mark.parametrize("project", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_advising_on_a_project_executes_none_of_its_files(
    project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "marker"
    monkeypatch.setenv("CHIPWISE_SCAN_MARKER", str(marker))
    facts = scan_facts(FIXTURES / project)
    recommend(
        training("gpt2", tokens=1e8, chips=("h100-sxm", "tpu-v5e"), max_chips=2, project=facts)
    )
    assert not marker.exists()
