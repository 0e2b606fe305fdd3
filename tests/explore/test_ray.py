"""Explore on Ray: a local cluster bound to loopback gives the pool's rows bit for bit.

Skipped without ray (the ``[ray]`` extra). The cluster is started here, on 127.0.0.1 with
no dashboard; 'ss' then shows that nothing it started listens on another address.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from chipwise.explore import grid_from, run_grid
from chipwise.explore.runner import import_ray

if importlib.util.find_spec("ray") is None:
    pytest.skip("ray is not installed (pip install 'chipwise[ray]')", allow_module_level=True)

GRID = {
    "workloads": ["gpt2", "llama3-8b"],
    "chips": ["h100-sxm", "h100-sxm:hbm_bandwidth*1.5", "tpu-v5e"],
    "counts": [1, 2],
    "phases": ["infer", "train"],
    "global_batch": [16],
    "seq_len": [1024],
}
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|\[::1\]|\[::ffff:127\.\d+\.\d+\.\d+\]):\d+$")


def _descendants(root: int) -> set[int]:
    """Every process below ``root`` (read from /proc)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        parent[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def _listening(pids: set[int]) -> list[str]:
    """Local addresses of the TCP sockets ``pids`` listen on ('ss -ltnpH')."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            found.append(line.split()[3])
    return found


@pytest.mark.slow
# Ray starts its processes with os.fork; when an earlier test in the same pytest process has
# imported JAX, JAX's at-fork hook warns (as an unraisable exception) that forking a
# multithreaded process may deadlock. Ray's children exec at once, so the warning is noise here.
@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ray_on_loopback_gives_the_same_rows_and_listens_nowhere_else() -> None:
    if shutil.which("ss") is None:
        pytest.skip("'ss' (iproute2) is needed to check the listening sockets")
    grid = grid_from(GRID)
    expected = run_grid(grid).table.rows
    ray = import_ray(loopback=True)
    ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2)
    try:
        got = run_grid(grid, ray="auto")  # uses the session started above
        addresses = _listening(_descendants(os.getpid()) | {os.getpid()})
    finally:
        ray.shutdown()
    assert got.runner == "ray" and got.table.rows == expected
    assert addresses, "found no socket of the Ray processes: the check would prove nothing"
    assert all(LOOPBACK.match(a) for a in addresses), addresses
