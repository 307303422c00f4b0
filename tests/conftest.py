"""Test-suite wiring: the C++ doctest cases run as pytest items: one command, one summary."""

from __future__ import annotations

import os
import shutil
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
