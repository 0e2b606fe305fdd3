"""A bounded pool for the web API's advise work, so one slow request, or many, cannot freeze
the server.

The planner is CPU-bound Python. Each advise runs on one of ``workers`` threads of its own
(never on the event loop, never on the thread pool that serves ``/api/chips`` and the
page); at most ``workers + queue`` requests are admitted at once and the next one is
answered 503 at once (``PoolFull``) instead of waiting behind them. A request's work stops
at ``time_limit_s`` after it starts: the job calls ``check()`` between units of work (the
advisor's per-chip progress callback), which raises ``TimeLimitExceeded``; a request whose
client has gone is stopped the same way.

``SharedAnswers`` lets identical requests share one computation (eight browsers asking the
page's default question cost one planning run).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from chipwise.errors import ChipwiseError

T = TypeVar("T")

# One worker: the planner is CPU-bound Python under the GIL, so a second thread adds no
# throughput and only slows the event loop that answers /api/chips (measured with
# benchmarks/hostile_web.py, 8 different advises on 2 shared cores: /api/chips slowest
# 604 ms with two workers, 356 ms with one; the advises finished in the same time).
# Sixteen waiting covers a small team; more would only wait minutes for an answer.
DEFAULT_WORKERS = 1
DEFAULT_QUEUE = 16
# One advise over the whole catalog takes 1-15 s on 2 shared cores (benchmarks/advise.py,
# this benchmark); every input is bounded, so this is a backstop, not a budget: a request
# still planning after five minutes is stopped.
DEFAULT_TIME_LIMIT_S = 300.0


class PoolFull(ChipwiseError):
    """Every worker is busy and the queue is full: answer 503, try again later."""


class TimeLimitExceeded(ChipwiseError):
    """A request's work ran past its time limit (or its client left) and was stopped."""


class AdvisePool:
    """``workers`` threads, ``queue`` waiting places, ``time_limit_s`` per request."""

    def __init__(
        self,
        *,
        workers: int = DEFAULT_WORKERS,
        queue: int = DEFAULT_QUEUE,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    ) -> None:
        if workers < 1 or queue < 0 or not time_limit_s > 0:
            raise ValueError(f"bad pool size: {workers=}, {queue=}, {time_limit_s=}")
        self.workers = workers
        self.queue = queue
        self.time_limit_s = time_limit_s
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="advise")
        self._admitted = threading.BoundedSemaphore(workers + queue)

    async def run(self, job: Callable[[Callable[[], None]], T]) -> T:
        """Run ``job(check)`` on a worker and return its result.

        Raises:
            PoolFull: ``workers + queue`` requests are already admitted.
            TimeLimitExceeded: the job ran past the limit (raised by its ``check``).
        """
        if not self._admitted.acquire(blocking=False):
            raise PoolFull(
                f"the server is busy ({self.workers} advice requests running and "
                f"{self.queue} waiting); try again in a few seconds"
            )
        stop = threading.Event()
        limit_s = self.time_limit_s

        def work() -> T:
            started = time.monotonic()

            def check() -> None:
                if stop.is_set():
                    raise TimeLimitExceeded("the request was cancelled")
                if time.monotonic() - started > limit_s:
                    raise TimeLimitExceeded(
                        f"the advice took over {limit_s:g} s and was stopped; narrow the "
                        "request (fewer chips, a smaller --max-chips)"
                    )

            check()
            return job(check)

        try:
            future = self._executor.submit(work)
        except RuntimeError:  # the executor is shut down (the server is stopping)
            self._admitted.release()
            raise PoolFull("the server is stopping") from None
        # Released when the job ends, or when it is cancelled before it started.
        future.add_done_callback(lambda _: self._admitted.release())
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            stop.set()  # the client left: the worker stops at its next check
            raise

    def shutdown(self) -> None:
        """Stop taking work; running jobs finish (they are bounded by the time limit)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


# Answers kept for identical requests: the page's default question is asked again and again,
# and one answer (with its charts) is ~100 KB.
DEFAULT_CACHED_ANSWERS = 16


class SharedAnswers(Generic[T]):
    """Identical requests share one computation: a request equal to one in flight waits for
    that one's answer, and the last ``size`` answers are kept (the inputs are the whole
    question: the catalog and the models do not change while the server runs). Errors are
    not kept."""

    def __init__(self, size: int = DEFAULT_CACHED_ANSWERS) -> None:
        self.size = size
        self._done: OrderedDict[str, T] = OrderedDict()
        self._running: dict[str, asyncio.Future[T]] = {}

    async def get(self, key: str, compute: Callable[[], Awaitable[T]]) -> T:
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key]
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(compute())
            self._running[key] = running
            running.add_done_callback(lambda task: self._finished(key, task))
        # shield: one client leaving does not cancel the answer the others wait for.
        return await asyncio.shield(running)

    def _finished(self, key: str, task: asyncio.Future[T]) -> None:
        self._running.pop(key, None)
        if task.cancelled() or task.exception() is not None:
            return
        self._done[key] = task.result()
        while len(self._done) > self.size:
            self._done.popitem(last=False)
