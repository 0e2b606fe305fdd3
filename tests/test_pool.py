"""The worker pool: every task runs once, on the workers and in this process, with the
same results as one process; an error in a task reaches the caller."""

from __future__ import annotations

import os
import time

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
