"""Compile sharing beyond one machine: LIBSECTION_COMPILER_LAUNCHER=sccache with a Redis storage.
Two libsection cache folders stand for two machines; the second one's cold build takes the
compiled object from Redis instead of compiling it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_shared_cache import Machine, hits, misses, redis_command, redis_server, tool


@pytest.fixture(scope="module", autouse=True)
def tools_installed():
    # Both come with ./dev's install (deps/apt-packages.txt, deps/requirements.txt): a missing one
    # is a broken install, not a reason to skip.
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server not found: deps/install.sh installs it (deps/apt-packages.txt)")
    if tool("sccache") is None:
        pytest.fail("sccache not found: deps/install.sh installs it (deps/requirements.txt)")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The two machines' builds over one Redis, and a third machine's under another key prefix."""
    work = tmp_path_factory.mktemp("shared")
    with redis_server(work / "redis") as port:
        with Machine(work / "first", port).running() as first:
            first_build, first_stats = first.build(), first.stats()
        keys = int(redis_command(port, "DBSIZE").lstrip(":"))
        with Machine(work / "second", port).running() as second:
            second_build, second_stats = second.build(), second.stats()
        with Machine(work / "elsewhere", port, key_prefix="other-team").running() as elsewhere:
            elsewhere_build, elsewhere_stats = elsewhere.build(), elsewhere.stats()
    return dict(
        first=(first_build, first_stats),
        second=(second_build, second_stats),
        elsewhere=(elsewhere_build, elsewhere_stats),
        keys=keys,
        work=work,
    )


def test_the_first_machine_compiles_and_stores_the_object_in_redis(shared):
    build, stats = shared["first"]
    assert build["compiled"] and build["result"] == [0.0, 2.0, 4.0]
    assert misses(stats) == 1 and hits(stats) == 0, stats
    assert stats["stats"]["cache_writes"] == 1, stats
    assert stats["cache_location"].startswith("redis"), stats["cache_location"]
    assert shared["keys"] >= 1  # the object is in Redis, not on the machine's disk
    assert not any((shared["work"] / "first" / "sccache" / "local").rglob("*.o*"))


def test_the_second_machine_takes_the_object_from_redis(shared):
    build, stats = shared["second"]
    first, _ = shared["first"]
    # Its own libsection cache was empty: it built the module, but sccache compiled nothing.
    assert build["compiled"] and build["result"] == [0.0, 2.0, 4.0]
    assert build["key"] == first["key"]
    assert Path(build["library"]).parents[2] == shared["work"] / "second" / "libsection-cache"
    assert hits(stats) == 1 and misses(stats) == 0, stats
    assert stats["stats"]["compilations"] == 0, stats


def test_a_machine_under_another_key_prefix_does_not_see_the_object(shared):
    build, stats = shared["elsewhere"]
    assert build["compiled"] and build["result"] == [0.0, 2.0, 4.0]
    assert misses(stats) == 1 and hits(stats) == 0, stats
