"""The module cache across processes: one compile for many builders, per-key locks, killed
compiles, corrupt entries, permissions, ownership and the size cap."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import libsection._core

TESTS = Path(__file__).parent
WORKER = TESTS / "linker_worker.py"
PACKAGE_PARENT = Path(libsection._core.__file__).parent.parent


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


def worker_env(cache_dir, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_PARENT), str(TESTS)])
    env["LIBSECTION_CACHE_DIR"] = str(cache_dir)
    env.update(extra)
    return env


def start_worker(dtype, env):
    return subprocess.Popen([sys.executable, str(WORKER), dtype], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def finish(process, timeout=180):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out)


def run_worker(dtype, env):
    return finish(start_worker(dtype, env))


def entries(cache_dir):
    return sorted(p.name for p in (cache_dir / "entries").iterdir())


@pytest.fixture
def blocking_compiler(tmp_path):
    """A CXX that signals when it starts compiling, then waits for a release file."""
    started, release = tmp_path / "started", tmp_path / "release"
    script = tmp_path / "blocking-c++"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do\n'
        '  if [ "$a" = "-c" ]; then\n'
        f'    touch "{started}"\n'
        f'    while [ ! -e "{release}" ]; do sleep 0.05; done\n'
        "  fi\n"
        "done\n"
        'exec g++ "$@"\n'
    )
    script.chmod(0o755)
    return script, started, release


def wait_for(path, process, timeout=60):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_many_processes_on_an_empty_cache_compile_once(cache_dir):
    env = worker_env(cache_dir)
    processes = [start_worker("float64", env) for _ in range(8)]
    results = [finish(p) for p in processes]
    assert all(r["correct"] for r in results)
    assert sum(r["compiled"] for r in results) == 1
    assert len({r["key"] for r in results}) == 1
    assert entries(cache_dir) == [results[0]["key"]]


def test_a_new_process_finds_the_module_without_compiling(cache_dir):
    env = worker_env(cache_dir)
    assert run_worker("float64", env)["compiled"] is True
    again = run_worker("float64", env)
    assert again == {**again, "compiled": False, "correct": True}


def test_different_ops_build_in_parallel(cache_dir, blocking_compiler):
    script, started, release = blocking_compiler
    slow = start_worker("float64", worker_env(cache_dir, CXX=str(script)))
    try:
        wait_for(started, slow)  # the float64 op is compiling, holding its key's lock
        other = run_worker("float32", worker_env(cache_dir))
        assert other["compiled"] and other["correct"]
        assert slow.poll() is None  # the other op finished while this one was still compiling
    finally:
        release.touch()
    result = finish(slow)
    assert result["compiled"] and result["correct"]


def test_a_compile_killed_half_way_leaves_nothing_to_load(cache_dir, blocking_compiler):
    script, started, _ = blocking_compiler
    victim = start_worker("float64", worker_env(cache_dir, CXX=str(script)))
    wait_for(started, victim)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.communicate()
    assert entries(cache_dir) == []

    rebuilt = run_worker("float64", worker_env(cache_dir))
    assert rebuilt["compiled"] and rebuilt["correct"]
    assert run_worker("float64", worker_env(cache_dir))["compiled"] is False


@pytest.mark.parametrize("damage", ["flip_bytes", "truncate", "drop_manifest"])
def test_a_corrupt_entry_is_detected_and_rebuilt(cache_dir, damage):
    env = worker_env(cache_dir)
    key = run_worker("float64", env)["key"]
    entry = cache_dir / "entries" / key
    library = entry / "module.so"
    if damage == "flip_bytes":
        data = bytearray(library.read_bytes())
        data[len(data) // 2] ^= 0xFF
        library.write_bytes(bytes(data))
    elif damage == "truncate":
        library.write_bytes(library.read_bytes()[:100])
    else:
        (entry / "manifest.json").unlink()

    process = start_worker("float64", env)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    result = json.loads(out)
    assert result["compiled"] and result["correct"]
    assert "corrupt" in err
    assert run_worker("float64", env)["compiled"] is False


def test_cache_directories_are_private_and_a_readable_root_is_left_as_it_is(cache_dir):
    cache_dir.mkdir(mode=0o755)
    os.chmod(cache_dir, 0o755)
    key = run_worker("float64", worker_env(cache_dir))["key"]
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o755  # never chmod'ed behind the user's back
    for path in [cache_dir / "entries", cache_dir / "locks", cache_dir / "tmp", cache_dir / "pch",
                 cache_dir / "entries" / key]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


@pytest.mark.parametrize("mode", [0o775, 0o777, 0o1777])
def test_a_root_writable_by_others_is_refused_not_chmoded(cache_dir, mode):
    cache_dir.mkdir()
    os.chmod(cache_dir, mode)
    process = start_worker("float64", worker_env(cache_dir))
    _, err = process.communicate(timeout=180)
    assert process.returncode != 0
    assert "refusing to use the cache directory" in err and "writable by other users" in err
    assert f"chmod 700 {cache_dir}" in err  # says what to do
    assert stat.S_IMODE(cache_dir.stat().st_mode) == mode
    assert list(cache_dir.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give an entry to another user")
def test_an_entry_owned_by_another_user_is_refused(cache_dir):
    key = run_worker("float64", worker_env(cache_dir))["key"]
    os.chown(cache_dir / "entries" / key, 4242, 4242)
    process = start_worker("float64", worker_env(cache_dir))
    _, err = process.communicate(timeout=180)
    assert process.returncode != 0
    assert "refusing to use" in err and "owned by uid 4242" in err


def test_size_cap_evicts_the_least_recently_used(cache_dir):
    env = worker_env(cache_dir, LIBSECTION_CACHE_MAX_BYTES="1")
    first = run_worker("float64", env)["key"]
    second = run_worker("float32", env)["key"]
    assert first != second
    assert entries(cache_dir) == [second]


def section_cache_tool():
    built = PACKAGE_PARENT.parent / "tools" / "section-cache" / "section-cache"
    found = str(built) if built.exists() else shutil.which("section-cache")
    if not found:
        pytest.skip("section-cache is not built")
    return found


def test_section_cache_tool_lists_explains_collects_and_clears(cache_dir):
    tool = section_cache_tool()
    key = run_worker("float64", worker_env(cache_dir))["key"]

    def run(*args):
        return subprocess.run([tool, "--cache-dir", str(cache_dir), *args], text=True,
                              capture_output=True, timeout=60)

    listing = run("list")
    assert listing.returncode == 0
    assert key[:12] in listing.stdout
    assert "VectorTimesVector(float64[:], float64[:]) -> float64[:]" in listing.stdout
    assert json.loads(run("list", "--json").stdout)[0]["key"] == key

    explained = run("explain", key[:8])
    assert explained.returncode == 0 and "verified" in explained.stdout
    assert run("explain", "ffffffff").returncode == 1

    assert run("gc", "--max-size", "1G").returncode == 0
    assert entries(cache_dir) == [key]
    assert run("gc", "--max-size", "0").returncode == 0
    assert entries(cache_dir) == []

    run_worker("float64", worker_env(cache_dir))
    assert run("clear").returncode == 0
    assert entries(cache_dir) == []
    assert run("gc", "--max-size", "lots").returncode == 2
