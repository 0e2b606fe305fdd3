"""Hostile-request benchmark of the web server: `chipwise serve` as an attacker meets it.

    python benchmarks/hostile_web.py [--advises 8] [--chips-limit-s 1.0]

Starts the real `chipwise serve` (this tree's ``src``) on a free loopback port in a
subprocess, sends the requests of issue 14's web check over real sockets (stdlib
``http.client``: absurd uploads, NaN, deep JSON, a chunked 20 MiB body, a foreign Host
header, an unknown key) and then ``--advises`` concurrent ``POST /api/advise`` (eight
different questions over the whole catalog) while polling ``GET /api/chips``, whose slowest
answer must stay under ``--chips-limit-s``. Prints one line per check and the chips
latency under load; exits non-zero when a check fails. Stops the server at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from chipwise.cli import main; main()"]
CLIENT_TIMEOUT_S = 300.0
LLAMA = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256,
}  # fmt: skip

Response = tuple[int, bytes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | Iterator[bytes] | None = None,
    headers: dict[str, str] | None = None,
    *,
    chunked: bool = False,
) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT_S)
    try:
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def upload(port: int, content: bytes) -> Response:
    boundary = "chipwise-hostile"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="config.json"'
            "\r\nContent-Type: application/json\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    return request(port, "POST", "/api/workloads/upload", body, headers)


def advise(port: int, raw: bytes) -> Response:
    return request(port, "POST", "/api/advise", raw, {"Content-Type": "application/json"})


def _one_line(response: Response, statuses: tuple[int, ...], *, echo: bytes = b"") -> str:
    status, body = response
    if status not in statuses:
        return f"status {status}, expected {statuses}: {body[:120]!r}"
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return f"not a JSON {{'error'}} answer: {body[:120]!r}"
    if "\n" in error:
        return "the error is not one line"
    if echo and echo in body:
        return "the body was echoed back"
    return ""


def _chunks(n_mib: int) -> Iterator[bytes]:
    yield b'{"workload": "'
    for _ in range(n_mib):
        yield b"A" * (1024 * 1024)
    yield b'"}'


DEEP_100K = b"[" * 100_000 + b"]" * 100_000
DEEP_500K = b"[" * 500_000 + b"]" * 500_000


def _upload_layers(p: int) -> str:
    config = json.dumps({**LLAMA, "num_hidden_layers": 1e12}).encode()
    return _one_line(upload(p, config), (400,))


def _deep_config(p: int) -> str:
    return _one_line(advise(p, b'{"config": ' + b'{"a": ' * 500 + b"1" + b"}" * 501), (400, 422))


def _chunked(p: int) -> str:
    headers = {"Content-Type": "application/json"}
    response = request(p, "POST", "/api/advise", _chunks(20), headers, chunked=True)
    return _one_line(response, (413,), echo=b"AAAAAAAA")


def _foreign_host(p: int) -> str:
    response = request(p, "GET", "/api/chips", headers={"Host": "rebind.attacker.test"})
    return _one_line(response, (421, 400))


def _long_key(p: int) -> str:
    return _one_line(advise(p, json.dumps({"k" * 100_000: 1}).encode()), (422,), echo=b"k" * 1000)


CHECKS: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("upload of 20 MiB", lambda p: _one_line(upload(p, b" " * (20 << 20)), (413,))),
    ("upload with 1e12 layers", _upload_layers),
    ("upload of binary bytes", lambda p: _one_line(upload(p, bytes(range(256)) * 64), (400,))),
    ("upload nested 100000 deep", lambda p: _one_line(upload(p, DEEP_100K), (400,))),
    ("advise with NaN", lambda p: _one_line(advise(p, b'{"budget_usd": NaN}'), (422,))),
    ("advise with a deep config", _deep_config),
    ("advise nested 500000 deep", lambda p: _one_line(advise(p, DEEP_500K), (400, 413, 422))),
    ("chunked 20 MiB body", _chunked),
    ("foreign Host header", _foreign_host),
    ("unknown key, 100 kB long", _long_key),
)  # fmt: skip
# Different questions, so the server cannot share one computation among them.
LOAD_BODIES = (
    {}, {"workload": "llama3-70b"}, {"phase": "infer"}, {"objective": "time"},
    {"workload": "mixtral-8x7b"}, {"objective": "energy"}, {"pricing": "spot"},
    {"workload": "llama3-70b", "phase": "infer"},
)  # fmt: skip


def load_check(port: int, n_advises: int, limit_s: float) -> tuple[bool, str]:
    """``n_advises`` default advises at once while ``/api/chips`` is polled."""
    latencies: list[float] = []
    with ThreadPoolExecutor(max_workers=n_advises) as pool:
        bodies = [json.dumps(LOAD_BODIES[i % len(LOAD_BODIES)]).encode() for i in range(n_advises)]
        futures = [pool.submit(advise, port, body) for body in bodies]
        time.sleep(0.3)
        while not all(f.done() for f in futures):
            start = time.perf_counter()
            status, _ = request(port, "GET", "/api/chips")
            latencies.append(time.perf_counter() - start)
            if status != 200:
                return False, f"/api/chips answered {status} under load"
            time.sleep(0.1)
        statuses = [f.result()[0] for f in futures]
    if any(s not in (200, 503) for s in statuses):
        return False, f"advise statuses {statuses}"
    worst = max(latencies, default=0.0)
    ordered = sorted(latencies)
    median = ordered[len(ordered) // 2] if ordered else 0.0
    text = (
        f"{len(latencies)} /api/chips answers under {n_advises} advises: median "
        f"{median * 1e3:.0f} ms, slowest {worst * 1e3:.0f} ms; advise statuses {statuses}"
    )
    return worst < limit_s, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--advises", type=int, default=8, help="Concurrent advise requests.")
    parser.add_argument("--chips-limit-s", type=float, default=1.0, help="Slowest /api/chips.")
    args = parser.parse_args()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    server = subprocess.Popen(
        [*CLI, "serve", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    failed = 0
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(port, "GET", "/api/chips")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("FAIL the server did not start")
                return 1
            time.sleep(0.2)
        for name, check in CHECKS:
            start = time.perf_counter()
            why = check(port)
            failed += bool(why)
            mark = "FAIL" if why else "PASS"
            print(f"{mark} {time.perf_counter() - start:5.1f}s  {name:28}  {why}", flush=True)
        ok, text = load_check(port, args.advises, args.chips_limit_s)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}  load: {text}", flush=True)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    total = len(CHECKS) + 1
    print(f"{total - failed}/{total} web checks held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
