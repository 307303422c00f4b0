"""The module cache across processes: one compile for many builders, per-key locks, killed
compiles, corrupt entries, permissions, ownership and the size cap."""

import json
import os
import re
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
    return subprocess.Popen(
        [sys.executable, str(WORKER), dtype],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


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
    yield script, started, release
    # The compiler runs in a process group of its own: killing a victim's group leaves it
    # waiting here, so release it.
    release.touch()


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
    for path in [
        cache_dir / "entries",
        cache_dir / "locks",
        cache_dir / "tmp",
        cache_dir / "pch",
        cache_dir / "entries" / key,
    ]:
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
        return subprocess.run(
            [tool, "--cache-dir", str(cache_dir), *args], text=True, capture_output=True, timeout=60
        )

    listing = run("list")
    assert listing.returncode == 0
    assert key[:12] in listing.stdout
    assert "VectorTimesVector(float64[:], float64[:]) -> float64[:]" in listing.stdout
    listed = {e["key"]: e for e in json.loads(run("list", "--json").stdout)}
    assert listed[key]["manifest"]["ops"] == ["VectorTimesVector"]

    explained = run("explain", key[:8])
    assert explained.returncode == 0 and "verified" in explained.stdout
    assert re.search(r"created: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)", explained.stdout)
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("section-cache ")
    assert run("explain", "ffffffff").returncode == 1

    assert run("gc", "--max-size", "1G").returncode == 0
    assert entries(cache_dir) == [key]
    assert run("gc", "--max-size", "0").returncode == 0
    assert entries(cache_dir) == []

    run_worker("float64", worker_env(cache_dir))
    assert run("clear").returncode == 0
    assert entries(cache_dir) == []
    assert run("gc", "--max-size", "lots").returncode == 2


def test_an_entry_in_another_manifest_format_is_rebuilt_and_listed_as_such(cache_dir):
    tool = section_cache_tool()
    env = worker_env(cache_dir)
    key = run_worker("float64", env)["key"]
    manifest_path = cache_dir / "entries" / key / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    ours = manifest["format"]
    manifest["format"] = ours + 1  # as another libsection version would write it
    manifest_path.write_text(json.dumps(manifest, indent=2))

    def run(*args):
        return subprocess.run(
            [tool, "--cache-dir", str(cache_dir), *args], text=True, capture_output=True, timeout=60
        )

    listing = run("list")
    assert listing.returncode == 0, listing.stderr
    assert f"not loaded: manifest.json is in format {ours + 1}" in listing.stdout
    explained = run("explain", key[:12])
    assert explained.returncode == 0, explained.stderr
    assert "another format" in explained.stdout and "corrupt" not in explained.stdout
    assert manifest_path.exists()  # explaining it changed nothing
    (record,) = [r for r in json.loads(run("list", "--json").stdout) if r["key"] == key]
    assert record["manifest"] is None and f"format {ours + 1}" in record["problem"]

    process = start_worker("float64", env)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err  # never an error
    result = json.loads(out)
    assert result["compiled"] and result["correct"] and result["key"] == key
    assert "corrupt" not in err  # a miss, not damage: no warning
    assert json.loads(manifest_path.read_text())["format"] == ours
    assert "verified" in run("explain", key[:12]).stdout


# ---- the trust model: other local users, swaps, locks --------------------------------------

ATTACKER = "libsection-test-attacker"


@pytest.fixture(scope="module")
def attacker():
    """(uid, gid) of an unprivileged local user, created when missing."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another local user")
    import pwd

    try:
        entry = pwd.getpwnam(ATTACKER)
    except KeyError:
        if not shutil.which("useradd") or not shutil.which("setpriv"):
            pytest.skip("needs useradd and setpriv to act as another local user")
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", ATTACKER], check=True)
        entry = pwd.getpwnam(ATTACKER)
    return entry.pw_uid, entry.pw_gid


def as_user(user, *argv, **kwargs):
    uid, gid = user
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv], **kwargs
    )


@pytest.fixture
def shared_dir():
    """A sticky world-writable directory outside pytest's private tmp tree, like /tmp."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="libsection-shared-", dir="/tmp"))
    os.chmod(path, 0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def failing_worker(cache, **extra):
    process = start_worker("float64", worker_env(cache, **extra))
    _, err = process.communicate(timeout=180)
    assert process.returncode != 0, err
    return err


def test_another_users_subfolders_in_a_world_writable_cache_are_refused(attacker, shared_dir):
    cache = shared_dir / "cache"
    cache.mkdir()
    os.chmod(cache, 0o1777)  # a cache directory others can write into
    for sub in ("entries", "locks", "tmp", "failed", "state", "pch"):
        as_user(attacker, "mkdir", "-m", "777", str(cache / sub), check=True)

    err = failing_worker(cache)
    assert "refusing to use the cache directory" in err and "writable by other users" in err
    assert stat.S_IMODE(cache.stat().st_mode) == 0o1777  # refused, never chmod'ed

    os.chmod(cache, 0o700)  # private now, but what the other user planted stays refused
    err = failing_worker(cache)
    assert f"owned by uid {attacker[0]}" in err
    assert not any(list((cache / sub).iterdir()) for sub in ("entries", "tmp"))


def test_a_cache_path_planted_as_a_symlink_by_another_user_is_refused(
    attacker, shared_dir, tmp_path
):
    target = tmp_path / "private"
    target.mkdir()
    os.chmod(target, 0o755)
    link = shared_dir / "cache"
    as_user(attacker, "ln", "-s", str(target), str(link), check=True)
    err = failing_worker(link)
    assert f"is a symbolic link owned by uid {attacker[0]}" in err
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # its target is neither chmod'ed
    assert list(target.iterdir()) == []  # nor filled


SWAPPING_DLOPEN = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Swaps the cache entry for a planted one right before the module is loaded: the window
   between verifying an entry and loading it. */
void* dlopen(const char* file, int mode) {
    static int swapped;
    static void* (*real)(const char*, int);
    if (!real) real = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
    const char* entry = getenv("SWAP_ENTRY");
    if (!swapped && file && entry &&
        (strstr(file, "/entries/") || strncmp(file, "/proc/self/fd/", 14) == 0)) {
        swapped = 1;
        rename(entry, getenv("SWAP_ASIDE"));
        rename(getenv("SWAP_PLANTED"), entry);
    }
    return real(file, mode);
}
"""

PLANTED_MODULE = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    FILE* f = fopen(getenv("PLANTED_MARKER"), "w");
    if (f) { fputs("the planted module ran\n", f); fclose(f); }
}
"""


def compile_shared(tmp_path, name, source):
    (tmp_path / f"{name}.c").write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(out), str(tmp_path / f"{name}.c"), "-ldl"], check=True
    )
    return out


def test_swapping_the_entry_between_verification_and_loading_loads_the_verified_module(
    cache_dir, tmp_path
):
    key = run_worker("float64", worker_env(cache_dir))["key"]
    entry = cache_dir / "entries" / key
    planted = tmp_path / "planted"
    shutil.copytree(entry, planted)  # the same manifest; a module.so of the attacker's
    shutil.copy(compile_shared(tmp_path, "planted", PLANTED_MODULE), planted / "module.so")
    marker = tmp_path / "marker"
    env = worker_env(
        cache_dir,
        LD_PRELOAD=str(compile_shared(tmp_path, "swap", SWAPPING_DLOPEN)),
        SWAP_ENTRY=str(entry),
        SWAP_PLANTED=str(planted),
        SWAP_ASIDE=str(tmp_path / "aside"),
        PLANTED_MARKER=str(marker),
    )
    process = start_worker("float64", env)
    out, err = process.communicate(timeout=180)
    assert (tmp_path / "aside").exists()  # the swap happened
    assert not marker.exists(), "the planted module was loaded"
    assert process.returncode == 0, err
    assert json.loads(out) == {**json.loads(out), "compiled": False, "correct": True}


def test_a_stopped_builder_makes_others_time_out_naming_it(cache_dir, blocking_compiler):
    script, started, release = blocking_compiler
    holder = start_worker("float64", worker_env(cache_dir, CXX=str(script)))
    try:
        wait_for(started, holder)  # compiling, with the key's lock held
        os.kill(holder.pid, signal.SIGSTOP)
        # The worker gives up (its lock timeout), not the test: failing_worker's own timeout,
        # a hang guard, is far beyond the 2 s it waits.
        err = failing_worker(cache_dir, CXX=str(script), LIBSECTION_LOCK_TIMEOUT="2")
        assert f"held by pid {holder.pid}, which is stopped" in err
        assert "LIBSECTION_LOCK_TIMEOUT" in err
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        release.touch()
    assert finish(holder)["compiled"]


# ---- upkeep: the size cap, damaged entries, leftovers, precompiled headers ------------------


@pytest.mark.parametrize("value", ["inf", "1e30", "nan", "garbage", "-1", "5MB", "0x10"])
def test_a_malformed_size_cap_fails_before_any_work(cache_dir, value):
    err = failing_worker(cache_dir, LIBSECTION_CACHE_MAX_BYTES=value)
    assert f"LIBSECTION_CACHE_MAX_BYTES=`{value}`" in err
    assert "compiling" not in err
    assert not cache_dir.exists()


@pytest.mark.parametrize(
    "damage", ["size_not_a_number", "entry_mode_0777", "entry_symlink", "library_symlink"]
)
def test_a_damaged_entry_is_rebuilt_not_stuck(cache_dir, tmp_path, damage):
    env = worker_env(cache_dir)
    key = run_worker("float64", env)["key"]
    entry = cache_dir / "entries" / key
    if damage == "size_not_a_number":
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["size"] = "big"
        (entry / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "entry_mode_0777":
        os.chmod(entry, 0o777)
    elif damage == "entry_symlink":
        entry.rename(tmp_path / "moved")
        entry.symlink_to(tmp_path / "moved")
    else:
        (entry / "module.so").rename(tmp_path / "module.so")
        (entry / "module.so").symlink_to(tmp_path / "module.so")
    for _ in range(2):  # rebuilt once, then found
        process = start_worker("float64", env)
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        assert json.loads(out)["correct"]
    assert "corrupt" in err or json.loads(out)["compiled"] is False
    assert entry.is_dir() and not entry.is_symlink()


def test_section_cache_creates_nothing_where_there_is_no_cache(tmp_path):
    tool = section_cache_tool()
    missing = tmp_path / "nonexistent" / "x"
    for args, status in [
        (["list"], 0),
        (["list", "--json"], 0),
        (["gc"], 0),
        (["clear"], 0),
        (["explain", "abc"], 1),
    ]:
        result = subprocess.run(
            [tool, "--cache-dir", str(missing), *args], text=True, capture_output=True, timeout=60
        )
        assert result.returncode == status, (args, result.stderr)
        assert not (tmp_path / "nonexistent").exists(), args
    listing = subprocess.run(
        [tool, "--cache-dir", str(missing), "list"], text=True, capture_output=True
    )
    assert "no cache at" in listing.stdout


BROKEN_OP = (
    "#section support_code_apply\n"
    "int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z) {\n"
    "    return undeclared_thing + 1;\n"
    "}\n"
)

BUILD_BROKEN = """
import sys
from libsection._build import CompileError, build
try:
    build(sys.argv[1], "APPLY_SPECIFIC(broken)", inputs=["float64[:]"], outputs=["float64[:]"])
except CompileError as e:
    print(e)
    sys.exit(3)
"""


def test_an_unwritable_failed_dir_does_not_hide_the_compile_error(tmp_path):
    source = tmp_path / "broken.c"
    source.write_text(BROKEN_OP)
    (tmp_path / "build_broken.py").write_text(BUILD_BROKEN)
    cache = tmp_path / "cache"
    argv = [sys.executable, str(tmp_path / "build_broken.py"), str(source)]
    if os.geteuid() == 0:  # root writes anywhere, unless it gives up overriding permissions
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *argv]
        if subprocess.run([*argv[:3], "true"]).returncode != 0:
            pytest.skip("cannot drop root's permission override here (setpriv --bounding-set)")

    def build_broken():
        return subprocess.run(
            argv,
            env=worker_env(cache, LIBSECTION_PCH="0"),
            text=True,
            capture_output=True,
            timeout=180,
        )

    (cache / "failed").mkdir(mode=0o700, parents=True)
    os.chmod(cache, 0o700)
    os.chmod(cache / "failed", 0o500)
    result = build_broken()
    assert result.returncode == 3, result.stderr
    assert f"{source}:3:" in result.stdout and "undeclared_thing" in result.stdout
    assert "could not be kept" in result.stdout and "Permission denied" in result.stdout
    os.chmod(cache / "failed", 0o700)
    result = build_broken()
    assert result.returncode == 3, result.stderr
    assert f"the full log are in {cache / 'failed'}" in result.stdout


def test_precompiled_headers_count_in_the_cap_and_gc_and_clear_remove_them(cache_dir):
    tool = section_cache_tool()
    run_worker("float64", worker_env(cache_dir))
    headers = list((cache_dir / "pch").iterdir())
    if not headers:
        pytest.skip("this compiler does not use a precompiled header")

    def run(*args):
        return subprocess.run(
            [tool, "--cache-dir", str(cache_dir), *args], text=True, capture_output=True, timeout=60
        )

    assert "precompiled" in run("list").stdout
    assert run("gc", "--max-size", "0").returncode == 0
    assert list((cache_dir / "pch").iterdir()) == [] and entries(cache_dir) == []
    run_worker("float64", worker_env(cache_dir))
    assert list((cache_dir / "pch").iterdir())
    assert run("clear").returncode == 0
    assert list((cache_dir / "pch").iterdir()) == []


def test_a_setup_killed_half_way_is_reclaimed(cache_dir, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    script = tmp_path / "stuck-c++"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *c++-header*)\n'
        f'  touch "{started}"; while [ ! -e "{release}" ]; do sleep 0.05; done; exit 1;;\n'
        "esac\n"
        'exec g++ "$@"\n'
    )
    script.chmod(0o755)
    victim = start_worker("float64", worker_env(cache_dir, CXX=str(script)))
    wait_for(started, victim)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.communicate()
    release.touch()  # the compiler, in a process group of its own, outlived the victim
    leftovers = list((cache_dir / "tmp").iterdir())
    assert leftovers
    past = time.time() - 3600
    for path in leftovers:
        os.utime(path, (past, past))
    result = subprocess.run(
        [section_cache_tool(), "--cache-dir", str(cache_dir), "gc"],
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert list((cache_dir / "tmp").iterdir()) == []


def test_modules_loaded_one_after_another_in_a_process_each_run_their_own_code(
    cache_dir, monkeypatch
):
    # Modules are loaded as /proc/self/fd/N; glibc returns an already loaded module for a name
    # it knows, so a reused descriptor number would hand back the previous module.
    import numpy as np
    from linker_ops import VTV, VTV_FUNC

    from libsection._build import build

    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(cache_dir))
    for dtype in ("float64", "float32", "int32"):
        f = build(
            VTV,
            VTV_FUNC,
            inputs=[f"{dtype}[:]"] * 2,
            outputs=[f"{dtype}[:]"],
            name=f"VectorTimesVector_{dtype}",
        )
        x = np.arange(5, dtype=dtype)
        out = f(x, x)
        assert out.dtype == np.dtype(dtype) and np.array_equal(out, x * x)


def test_a_module_asked_for_after_the_cache_directory_changed_is_in_the_new_cache(
    tmp_path, monkeypatch
):
    """The in-process memo of loaded modules is per cache: changing LIBSECTION_CACHE_DIR
    mid-process builds (or finds) the module there, rather than serving it from the old one."""
    import numpy as np
    from linker_ops import VTV, VTV_FUNC

    from libsection._build import build

    spec = dict(inputs=["float64[:]"] * 2, outputs=["float64[:]"], name="VtvMovingCache")
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(first))
    build(VTV, VTV_FUNC, **spec)
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(second))
    f = build(VTV, VTV_FUNC, **spec)
    assert f.info["compiled"], f.info
    assert entries(second) == entries(first)  # the same key, built anew in the second cache
    x = np.arange(3.0)
    assert np.array_equal(f(x, x), x * x)


# ---- headers of the user's folders: their content is part of what an entry is ----------------

HEADER_OP = """\
#section support_code
#include "offset.h"

#section code
Py_XDECREF(OUTPUT_0);
OUTPUT_0 = (PyArrayObject*)PyArray_NewCopy(INPUT_0, NPY_CORDER);
if (NULL == OUTPUT_0) FAIL;
{
    double* d = (double*)PyArray_DATA(OUTPUT_0);
    for (npy_intp i = 0; i < PyArray_SIZE(OUTPUT_0); ++i) d[i] += OFFSET;
}
"""

# Builds the op of `folder` in a process of its own: whether it compiled, and what it computes.
HEADER_WORKER = """
import json, logging, sys
import numpy as np
import libsection
logging.basicConfig(level=logging.INFO)  # the cache says why it rebuilds
folder = sys.argv[1]
f = libsection.build([folder + "/op.c"], None, ["float64[:]"], ["float64[:]"],
                     name="AddOffset", c_header_dirs=[folder + "/include"])
print(json.dumps({"compiled": f.info["compiled"], "value": float(f(np.zeros(1))[0])}))
"""


def header_op(tmp_path, offset):
    folder = tmp_path / "op"
    (folder / "include").mkdir(parents=True, exist_ok=True)
    (folder / "op.c").write_text(HEADER_OP)
    (folder / "include" / "offset.h").write_text(f"#define OFFSET {offset}\n")
    return folder


def build_in_a_process(folder, env):
    run = subprocess.run(
        [sys.executable, "-c", HEADER_WORKER, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), run.stderr


def test_a_header_edited_between_two_processes_builds_anew(cache_dir, tmp_path):
    env = worker_env(cache_dir)
    folder = header_op(tmp_path, 1.0)
    assert build_in_a_process(folder, env)[0] == {"compiled": True, "value": 1.0}
    # The header as it was: a hit, no compiler run.
    assert build_in_a_process(folder, env)[0] == {"compiled": False, "value": 1.0}
    (key,) = entries(cache_dir)

    header_op(tmp_path, 2.0)
    result, err = build_in_a_process(folder, env)
    assert result == {"compiled": True, "value": 2.0}
    assert "offset.h changed since it was built" in err and "corrupt" not in err
    assert entries(cache_dir) == [key]  # the same key, its entry replaced
    assert build_in_a_process(folder, env)[0] == {"compiled": False, "value": 2.0}
    manifest = json.loads((cache_dir / "entries" / key / "manifest.json").read_text())
    (header,) = manifest["headers"]  # the user's header only: not Python's, nor NumPy's
    assert header["path"] == str(folder / "include" / "offset.h") and len(header["sha256"]) == 64


def test_a_header_edited_between_two_builds_of_one_process_builds_anew(
    cache_dir, tmp_path, monkeypatch
):
    import numpy as np

    from libsection._build import build

    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(cache_dir))
    folder = header_op(tmp_path, 1.0)

    def built():
        f = build(
            [folder / "op.c"],
            None,
            ["float64[:]"],
            ["float64[:]"],
            name="AddOffset",
            c_header_dirs=[folder / "include"],
        )
        return f.info["compiled"], float(f(np.zeros(1))[0])

    assert built() == (True, 1.0)
    assert built() == (False, 1.0)
    header_op(tmp_path, 2.0)
    assert built() == (True, 2.0)
    assert built() == (False, 2.0)
