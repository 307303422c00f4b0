"""Every public name of the package has an example in its docstring, and every example runs.

The examples are the ones the API reference shows: read by griffe (as mkdocstrings reads them)
from the installed package's sources and, for the compiled core, its stub, then run with doctest
against the installed package, in a temporary working directory with a private compile cache,
so an example that goes stale fails here."""

from __future__ import annotations

import doctest
from pathlib import Path

import griffe
import pytest

import libsection
import libsection.pytensor

PUBLIC = [f"libsection.{name}" for name in libsection.__all__ if not name.startswith("__")] + [
    f"libsection.pytensor.{name}" for name in libsection.pytensor.__all__
]
# Read as the site reads them (docstrings, TYPE_CHECKING branches, _core.pyi), from the copy
# that is installed: no import of the sources.
PACKAGE = griffe.load(
    "libsection",
    search_paths=[str(Path(libsection.__file__).parent.parent)],
    docstring_parser="google",
    allow_inspection=False,
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def documented(path: str) -> griffe.Object:
    obj = PACKAGE[path.removeprefix("libsection.")]
    return obj.final_target if isinstance(obj, griffe.Alias) else obj


def examples(path: str) -> list[doctest.DocTest]:
    """The doctests of ``path``'s docstring and of its public members' (methods, attributes)."""
    found = []
    parser = doctest.DocTestParser()
    pending = [(path, documented(path))]
    while pending:
        name, obj = pending.pop()
        if obj.docstring is not None:
            # Not the package's namespace: the examples import what they use, as a user would.
            globs = {"__name__": "libsection_example"}
            test = parser.get_doctest(
                obj.docstring.value, globs, name, str(obj.filepath), obj.docstring.lineno
            )
            if test.examples:
                found.append(test)
        if isinstance(obj, griffe.Class):
            pending += [
                (f"{name}.{member}", child)
                for member, child in obj.members.items()
                if not member.startswith("_") and not child.is_alias
            ]
    return found


@pytest.mark.parametrize("path", PUBLIC)
def test_public_name_has_an_example(path):
    docstring = documented(path).docstring
    assert docstring is not None, f"{path} has no docstring"
    sections = [s.kind.value for s in docstring.parsed]
    assert "examples" in sections, f"{path}'s docstring has no Examples section: {sections}"
    own = doctest.DocTestParser().get_examples(docstring.value)
    assert own, f"{path}: its Examples section has no >>> example"


@pytest.mark.parametrize("path", PUBLIC)
def test_docstring_examples_run(path, tmp_path, monkeypatch, cache_dir):
    monkeypatch.chdir(tmp_path)  # the examples write their section files here
    tests = examples(path)
    assert tests, f"{path}: no examples"
    for test in tests:
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        report: list[str] = []
        runner.run(test, out=report.append)
        assert runner.failures == 0, "".join(report)
