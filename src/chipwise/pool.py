"""Worker processes on this machine: how many a run may use, and a pool that runs pure tasks
on them and this process (or this process alone, for one worker). ``chipwise explore``
(grid points), ``chipwise validate`` (validation rows) and ``chipwise advise`` (chips) share
it.

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
from collections import deque
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
    here: Callable[[T], R] | None = None,
) -> None:
    """Run ``fn`` on every task, calling ``finished`` here with each result: in this process
    and in order for one worker, else on ``workers`` processes, this one among them, in
    completion order (``preload``: the module the fork server imports first; ``here``: how
    this process runs a task itself, ``fn`` by default). An error in a task, or Ctrl-C,
    cancels the rest.

    The ``workers - 1`` worker processes take tasks from the front of the list and this
    process takes them from the back, so it works while they start (a fork server imports
    ``preload`` first: ~1 s on 2 cores, a third of a whole-catalog SLO search); a task a
    worker has not started is cancelled there before this process runs it, so each runs
    once."""
    run_here = here or fn
    if workers <= 1:
        for task in tasks:
            finished(run_here(task))
        return
    items = list(tasks)
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    # workers start (and stay) deaf to Ctrl-C: the parent stops them. Spawned workers
    # inherit the parent's ignoring while they start; a fork server started deaf forks deaf
    # workers, so only its own start ignores Ctrl-C, and one pressed while the workers start
    # (the server imports ``preload`` first, ~1 s) is held and raised once they have.
    starting = sigint_ignored
    if method == "forkserver":
        from multiprocessing import forkserver  # POSIX only

        ctx.set_forkserver_preload([preload])
        with sigint_ignored():
            forkserver.ensure_running()
        starting = sigint_deferred
    pool = ProcessPoolExecutor(max_workers=workers - 1, mp_context=ctx)
    try:
        with starting():
            futures = [pool.submit(fn, t) for t in items]
        waiting = set(futures)
        # futures as they complete, appended by the pool's thread (a cancelled one too),
        # so this process reports them between its own tasks without scanning them all
        completed: deque[Future[R]] = deque()
        for fut in futures:
            fut.add_done_callback(completed.append)

        def report(ready: Iterable[Future[R]]) -> None:
            for fut in ready:
                if fut in waiting:  # not one this process cancelled and ran, nor reported
                    waiting.discard(fut)
                    finished(fut.result())

        for fut, task in zip(reversed(futures), reversed(items), strict=True):
            while completed:
                report((completed.popleft(),))
            if fut.cancel():  # not started by a worker: run it here
                waiting.discard(fut)
                finished(run_here(task))
        while waiting:
            ready, _ = wait(waiting, return_when=FIRST_COMPLETED)
            report(ready)
    except KeyboardInterrupt:
        # wait for the workers' running tasks (they ignore Ctrl-C): a worker still starting
        # when this process exits cannot open the pool's semaphores and prints a traceback
        pool.shutdown(wait=True, cancel_futures=True)
        raise
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


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C pressed during the block and raise it (``KeyboardInterrupt``) when the
    block ends, so the block is never cut short. The main thread only, and only while
    Ctrl-C raises (a process told to ignore it keeps ignoring it)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    pressed: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt
