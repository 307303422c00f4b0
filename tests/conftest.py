"""Test-suite wiring: the C++ doctest cases run as pytest items (one command, one summary), and
on a stack `./dev test` runs, a skip for want of a package the stack pins fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def doctest_binary() -> Path:
    """The unit-test binary: $LIBSECTION_TEST_BINARY, else the one ./dev builds for this stack."""
    explicit = os.environ.get("LIBSECTION_TEST_BINARY")
    stack = "py%d%d" % sys.version_info[:2]
    candidates = (
        [Path(explicit)] if explicit else [ROOT / f"build/wheel-{stack}/tests/libsection_tests"]
    )
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise pytest.UsageError(
        f"C++ unit tests not built (looked for {', '.join(map(str, candidates))}); "
        "run ./dev test, or set LIBSECTION_TEST_BINARY"
    )


class DoctestRun:
    """Runs the whole doctest binary once and answers per test case."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._results: dict[str, str | None] | None = None

    def cases(self) -> list[str]:
        out = subprocess.run(
            [str(self.binary), "--list-test-cases", "--no-version"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        names = [line.strip() for line in out.splitlines()]
        return [n for n in names if n and not n.startswith("[doctest]") and not n.startswith("===")]

    def result(self, case: str) -> str | None:
        """None when the case passed, else the failure text."""
        if self._results is None:
            run = subprocess.run(
                [str(self.binary), "--reporters=junit", "--no-version"],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            self._results = {}
            for testcase in ET.fromstring(run.stdout).iter("testcase"):
                problems = [e for e in testcase if e.tag in ("failure", "error")]
                text = "\n".join((p.get("message") or "") + "\n" + (p.text or "") for p in problems)
                self._results[testcase.get("name", "")] = text or None
            if run.returncode != 0 and not any(self._results.values()):
                # A failure the JUnit report did not record (e.g. a FAIL message): the binary's
                # own exit status still says so, and no case may pass silently.
                blame = (
                    f"the doctest binary exited {run.returncode} with no failure in its JUnit "
                    f"report; run {self.binary} directly to see it"
                )
                self._results = {name: blame for name in self._results}
        if case not in self._results:
            return f"test case {case!r} did not run (crashed binary?)"
        return self._results[case]


class DoctestItem(pytest.Item):
    # No fixtures; the attribute is there because plugins' hooks read it from every item
    # (pytest-lsp's runtest wrapper fails on an item without it).
    funcargs: dict = {}

    def __init__(self, *, run: DoctestRun, case: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run, self.case = run, case

    def runtest(self) -> None:
        failure = self.run.result(self.case)
        if failure is not None:
            raise AssertionError(failure)

    def reportinfo(self):
        return self.path, None, f"doctest: {self.case}"


class DoctestFile(pytest.File):
    def collect(self):
        run = DoctestRun(doctest_binary())
        for case in run.cases():
            yield DoctestItem.from_parent(self, name=case, run=run, case=case)


def pytest_collect_file(file_path: Path, parent):
    # tests/unit/main.cpp stands for the whole doctest binary.
    if file_path.name == "main.cpp" and file_path.parent.name == "unit":
        return DoctestFile.from_parent(parent, path=file_path)
    return None


# ---- skips on a pinned stack ----------------------------------------------------------------
# `./dev test` names the stack it runs (LIBSECTION_TEST_STACK: py311, py312). There a test
# skipped because a package the stack pins does not import (deps/requirements.txt and
# deps/stack-<stack>.txt) fails instead: the install is broken, and a skip would make a whole
# feature vanish from the count. Every other skip is written to build/test-<stack>-skips.json,
# which tests/summarize.py lists and checks against the skips it expects. Outside ./dev (a
# user's own venv), skips stay skips.
STACK = os.environ.get("LIBSECTION_TEST_STACK")
# How a skip names the package it wants: pytest.importorskip's own message (given no reason of
# its own), or a skipif reason for a program a package installs.
NO_MODULE = re.compile(r"could not import '([\w.]+)'|^([\w.-]+) is not installed")
# Modules named otherwise than the distribution that installs them.
DISTRIBUTION_OF = {"yaml": "pyyaml", "IPython": "ipykernel"}  # IPython: ipykernel's dependency


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ./dev test runs the stacks' pytest side by side as background jobs, which a shell may start
# with SIGINT ignored; the interrupt tests, and the children they start, need Python's handler
# (an ignored signal stays ignored across exec, a handled one is reset to the default).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pinned_distributions(stack: str) -> set[str]:
    """The distributions the stack's deps files pin (`name==version` lines)."""
    pinned = set()
    for name in ("requirements.txt", f"stack-{stack}.txt"):
        for line in (ROOT / "deps" / name).read_text().splitlines():
            found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==", line)
            if found:
                pinned.add(normalized(found.group(1)))
    return pinned


def skip_reason(report) -> str | None:
    """A skip's reason (not an expected failure's), or None for any other outcome."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pinned_but_missing(reason: str | None) -> str | None:
    """Why a skip fails on this stack: the module it wanted is a pinned distribution's."""
    found = NO_MODULE.search(reason or "") if STACK else None
    if found is None:
        return None
    wanted = found.group(1) or found.group(2)
    top = wanted.split(".")[0]
    distribution = normalized(DISTRIBUTION_OF.get(top, top))
    if distribution not in pinned_distributions(STACK):
        return None
    return (
        f"the {STACK} stack pins {distribution} (deps/), but the test was skipped for want of "
        f"{wanted}: a broken install, not a skip ({reason})"
    )


class PinnedPackageMissing(pytest.Item):
    """Stands for a test module skipped whole because a pinned package does not import."""

    funcargs: dict = {}

    def __init__(self, *, message: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        pytest.fail(self.message, pytrace=False)

    def reportinfo(self):
        return self.path, None, self.name


_skips: list[dict[str, str]] = []


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    reason = skip_reason(report)
    why = pinned_but_missing(reason)
    if why is not None:  # the module's tests cannot be collected: one failing item stands in
        report.outcome, report.longrepr = "passed", None
        report.result = [
            PinnedPackageMissing.from_parent(collector, name="pinned package", message=why)
        ]
    elif reason is not None:
        _skips.append({"test": report.nodeid, "reason": reason})
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    reason = skip_reason(report)
    why = pinned_but_missing(reason)
    if why is not None:
        report.outcome, report.longrepr = "failed", why
    elif reason is not None:
        _skips.append({"test": report.nodeid, "reason": reason})
    return report


def pytest_sessionfinish(session):
    if STACK:
        skips = ROOT / "build" / f"test-{STACK}-skips.json"
        skips.parent.mkdir(parents=True, exist_ok=True)
        skips.write_text(json.dumps(_skips, indent=1) + "\n")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private compile cache for one test."""
    path = tmp_path / "cache"
    monkeypatch.setenv("LIBSECTION_CACHE_DIR", str(path))
    return path


def compiler_available() -> bool:
    return any(shutil.which(c) for c in ("c++", "g++", "clang++"))


# The example ops (ops/examples.py) are shared by the tests and the main job.
sys.path.insert(0, str(ROOT / "ops"))


# ---- tests that run once per ./dev test ------------------------------------------------------
# A C++ build that no Python stack changes (the oldest Boost, the sanitizers and fuzzers, the
# pre-commit hook's section-lint) gives the same answer on every stack: when ./dev test runs
# several stacks (LIBSECTION_TEST_RUN_STACKS, in order), it runs on the first one only. Run
# alone or outside ./dev, every stack runs it.
RUN_STACKS = os.environ.get("LIBSECTION_TEST_RUN_STACKS", "").split()
FIRST_STACK = RUN_STACKS[0] if RUN_STACKS else STACK


def pytest_collection_modifyitems(config, items):
    if STACK == FIRST_STACK:
        return
    skip = pytest.mark.skip(reason=f"once per run: ran on the {FIRST_STACK} stack")
    for item in items:
        if item.get_closest_marker("once_per_run"):
            item.add_marker(skip)
