"""The worker pool: every task runs once, on the workers and in this process, with the
same results as one process; an error in a task reaches the caller."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chipwise.pool import run_tasks


def _square(x: int) -> tuple[int, int, int]:
    time.sleep(0.01)  # long enough that the pool hands its first tasks to its worker
    return x, x * x, os.getpid()


def _fail(x: int) -> int:
    if x == 3:
        raise ValueError("task 3 failed")
    return x


def test_tasks_run_once_each_on_the_workers_and_here() -> None:
    """Workers take tasks from the front, this process from the back (while the workers
    start); together they run each task once and give what one process gives."""
    got: list[tuple[int, int, int]] = []
    here: list[int] = []

    def run_here(x: int) -> tuple[int, int, int]:
        here.append(x)
        return _square(x)

    run_tasks(_square, range(40), 2, got.append, preload="chipwise.pool", here=run_here)
    assert sorted(x for x, _, _ in got) == list(range(40))
    assert all(sq == x * x for x, sq, _ in got)
    pids = {pid for _, _, pid in got}
    assert os.getpid() in pids and len(pids) == 2  # this process and one worker
    assert here and here == sorted(here, reverse=True)  # from the back
    assert 0 not in here  # a worker started at the front


def test_one_worker_runs_in_order_here() -> None:
    got: list[tuple[int, int, int]] = []
    run_tasks(_square, range(5), 1, got.append, preload="chipwise.pool")
    assert [x for x, _, _ in got] == list(range(5))
    assert {pid for _, _, pid in got} == {os.getpid()}


def test_an_error_in_a_task_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="task 3 failed"):
        run_tasks(_fail, range(8), 2, lambda _: None, preload="chipwise.pool")


_CTRL_C_WHILE_STARTING = """
import os, signal, sys, threading, time
from chipwise.pool import run_tasks

def main():
    # Ctrl-C 0.3 s in: the fork server is still importing the (slow) preload module
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    run_tasks(time.sleep, [0.2] * 40, 2, lambda _: None, preload="slow_preload")
    print("finished every task")

if __name__ == "__main__":
    main()
"""


@pytest.mark.skipif(os.name != "posix", reason="a fork server and SIGINT are POSIX")
def test_a_ctrl_c_while_the_workers_start_stops_the_run_quietly(tmp_path: Path) -> None:
    """The fork server imports its preload module before any worker starts (~1 s): a Ctrl-C
    then used to be ignored with the start (the run went on to the end); now it stops the
    run once the workers have started, with no traceback from a half-started worker."""
    (tmp_path / "slow_preload.py").write_text("import time\ntime.sleep(1.0)\n")
    script = tmp_path / "run.py"
    script.write_text(_CTRL_C_WHILE_STARTING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert "finished every task" not in done.stdout
    assert done.returncode != 0
    assert "KeyboardInterrupt" in done.stderr
    assert "FileNotFoundError" not in done.stderr, done.stderr
