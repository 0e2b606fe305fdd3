"""Worker processes on this machine: how many a run may use, and a pool that runs pure tasks
on them (or this process, for one worker). ``chipwise explore`` (grid points), ``chipwise
validate`` (validation rows) and ``chipwise advise`` (chips) share it.

Workers are forked from a fork server that has imported the caller's module once (so a worker
costs no import, and no thread of the parent, such as a progress bar's, is ever forked), or
spawned where there is no fork server (Windows). Tasks must be pure functions of picklable
arguments, so a pool gives the same results as one process, bit for bit.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

Progress = Callable[[int, int], None]  # (items done, items in the whole run)


def default_workers() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_tasks(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    workers: int,
    finished: Callable[[R], None],
    *,
    preload: str,
) -> None:
    """Run ``fn`` on every task, calling ``finished`` here with each result: in this process
    and in order for one worker, else in ``workers`` processes (``preload``: the module the
    fork server imports first) in completion order. An error in a task, or Ctrl-C, cancels
    the rest."""
    if workers <= 1:
        for task in tasks:
            finished(fn(task))
        return
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload([preload])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    try:
        with sigint_ignored():  # workers start (and stay) deaf to Ctrl-C: the parent stops them
            pending: set[Future[R]] = {pool.submit(fn, t) for t in tasks}
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                finished(fut.result())
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore Ctrl-C while worker processes are started: they inherit it, so a Ctrl-C (which
    reaches the whole process group) stops only the parent, which cancels the pool, instead
    of printing a traceback from every worker. The main thread only (signals live there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
