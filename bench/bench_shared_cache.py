"""Compile sharing between machines: sccache with a Redis storage, two libsection caches.

    build/venv/py312/bin/python bench/bench_shared_cache.py [--reps 3]

Starts Debian's redis-server on a loopback port, then builds the tutorial's VectorTimesVector
op in fresh processes, each with its own empty LIBSECTION_CACHE_DIR (a machine of its own):
  * plain: no launcher, nothing cached anywhere (libsection's one-time header setup included);
  * first machine: LIBSECTION_COMPILER_LAUNCHER=sccache, Redis empty (sccache compiles, stores);
  * second machine: the same, Redis now holding the object (sccache fetches it, no compile).
Prints each build's time and the ratios. tests/python/test_shared_cache.py uses the same parts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OP_FILE = ROOT / "ops" / "vector_times_vector" / "vectorTimesVector.c"

# Built in a fresh process: a process keeps the modules it loaded.
DRIVER = textwrap.dedent(f"""
    import json, time
    import numpy as np
    import libsection
    start = time.perf_counter()
    f = libsection.build({str(OP_FILE)!r}, "APPLY_SPECIFIC(vector_times_vector)",
                         inputs=["float64[:]", "float64[:]"], outputs=["float64[:]"])
    seconds = time.perf_counter() - start
    result = f(np.arange(3.0), np.full(3, 2.0)).tolist()
    print(json.dumps(dict(f.info, seconds=seconds, result=result)))
""")


def tool(name: str) -> str | None:
    """A program from this Python's venv (where deps/requirements.txt puts sccache), else PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port: int, *words: str) -> str:
    """One command in Redis's protocol; the first line of the answer."""
    request = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode().split("\r\n")[0]


@contextlib.contextmanager
def redis_server(work: Path) -> Iterator[int]:
    """redis-server on a free loopback port, its files in `work`, nothing saved; yields the port."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server not installed (deps/apt-packages.txt)")
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(work),
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        str(work / "redis.log"),
    ]
    server = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis_command(port, "PING") == "+PONG":
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"redis-server did not start: {(work / 'redis.log').read_text()}"
                )
            time.sleep(0.05)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


@dataclass
class Machine:
    """One machine: its own libsection cache and sccache state, sharing only the Redis storage."""

    home: Path
    redis_port: int | None  # None: no launcher at all
    key_prefix: str = "libsection"
    sccache_port: int = 0  # the machine's own sccache server; a free one when 0

    def __post_init__(self) -> None:
        self.sccache_port = self.sccache_port or free_port()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCCACHE_", "LIBSECTION_"))}
        env["LIBSECTION_CACHE_DIR"] = str(self.home / "libsection-cache")
        if self.redis_port is None:
            return env
        (self.home / "sccache").mkdir(parents=True, exist_ok=True)
        config = self.home / "sccache" / "config.toml"
        config.touch()
        env.update(
            LIBSECTION_COMPILER_LAUNCHER=tool("sccache") or "sccache",
            SCCACHE_REDIS_ENDPOINT=f"redis://127.0.0.1:{self.redis_port}",
            SCCACHE_REDIS_KEY_PREFIX=self.key_prefix,
            SCCACHE_DIR=str(self.home / "sccache" / "local"),
            SCCACHE_CONF=str(config),
            SCCACHE_CACHED_CONF=str(self.home / "sccache" / "cached-config"),
            SCCACHE_ERROR_LOG=str(self.home / "sccache" / "server.log"),
            SCCACHE_SERVER_PORT=str(self.sccache_port),
            SCCACHE_IDLE_TIMEOUT="300",  # a server a failed run left behind exits by itself
        )
        return env

    def sccache(self, *args: str) -> str:
        run = subprocess.run(
            [tool("sccache") or "sccache", *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if run.returncode != 0:
            raise RuntimeError(f"sccache {' '.join(args)}: {run.stderr}{self.server_log()}")
        return run.stdout

    def server_log(self) -> str:
        log = self.home / "sccache" / "server.log"
        return log.read_text()[-2000:] if log.is_file() else ""

    @contextlib.contextmanager
    def running(self) -> Iterator[Machine]:
        """This machine's sccache server, started with its environment and stopped after."""
        if self.redis_port is None:
            yield self
            return
        self.sccache("--start-server")
        try:
            yield self
        finally:
            self.sccache("--stop-server")

    def stats(self) -> dict:
        return json.loads(self.sccache("--show-stats", "--stats-format=json"))

    def build(self) -> dict:
        """Builds the op in a fresh process: its info, build time in seconds, and result."""
        run = subprocess.run(
            [sys.executable, "-c", DRIVER],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode != 0:
            raise RuntimeError(f"build failed:\n{run.stderr}\n{self.server_log()}")
        return json.loads(run.stdout)


def hits(stats: dict) -> int:
    return sum(stats["stats"]["cache_hits"]["counts"].values())


def misses(stats: dict) -> int:
    return sum(stats["stats"]["cache_misses"]["counts"].values())


def measure_once(work: Path) -> tuple[float, float, float]:
    """Seconds for a plain cold build, the first machine's and the second machine's."""
    with redis_server(work / "redis") as port:
        plain = Machine(work / "plain", None).build()
        with Machine(work / "first", port).running() as first:
            stored = first.build()
            assert misses(first.stats()) == 1, first.stats()
        with Machine(work / "second", port).running() as second:
            fetched = second.build()
            assert hits(second.stats()) == 1, second.stats()
    return plain["seconds"], stored["seconds"], fetched["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="shared-cache-") as work:
            runs.append(measure_once(Path(work)))
    plain, first, second = (statistics.median(column) for column in zip(*runs, strict=True))
    print(f"median of {args.reps} runs, VectorTimesVector, build() in a fresh process:")
    print(f"  plain cold build, no launcher (incl. header setup)  {plain:7.2f} s")
    print(f"  first machine, sccache -> Redis (miss, stores)      {first:7.2f} s")
    print(f"  second machine, sccache <- Redis (hit)              {second:7.2f} s")
    print(f"  second / first: {second / first:.2f}   second / plain: {second / plain:.2f}")


if __name__ == "__main__":
    main()
