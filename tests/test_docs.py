"""The documentation site (mkdocs.yml) builds with warnings as errors (--strict: a broken internal
link or #anchor, a page left out of the navigation, an API name mkdocstrings cannot resolve), has
one page per README guide, and its API reference documents the public names from the docstrings
and _core.pyi."""

from __future__ import annotations

import ast
import html
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
    )


def test_the_site_builds_strictly_with_the_guides_and_the_api(tmp_path):
    site = tmp_path / "site"
    result = build_site(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr

    readme = (ROOT / "README.md").read_text()
    titles = [t for t in re.findall(r"^## (.+)$", readme, re.M)]
    guides = sorted(p.name for p in (site / "guides").iterdir())
    assert len(guides) == len(titles), (guides, titles)

    api = (site / "api/index.html").read_text()
    # A docstring that exists only in the stub of the compiled module.
    assert "A problem found in a section file" in api
    assert_api_entries_have_signatures_and_examples(api)
    assert_edit_links_resolve(site)


def public_names() -> list[str]:
    """``libsection``'s and ``libsection.pytensor``'s ``__all__`` (read from the sources the
    site is built from), as the API page's anchors name them."""
    names = []
    for module, source in (("libsection", "__init__.py"), ("libsection.pytensor", "pytensor.py")):
        tree = ast.parse((ROOT / "python/libsection" / source).read_text())
        (listed,) = [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
        ]
        names += [f"{module}.{name}" for name in ast.literal_eval(listed)]
    return [name for name in names if not name.rsplit(".", 1)[1].startswith("__")]


def text_of(html_text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


def api_entries(api: str) -> dict[str, tuple[str, str]]:
    """Each documented object of the API page: its anchor -> (its kind, its HTML from its
    heading, through its signature and docstring, to the next object's heading)."""
    headings = list(
        re.finditer(
            r'<h\d id="([\w.]+)" class="doc doc-heading">\s*<code class="[^"]*doc-symbol-(\w+)"',
            api,
        )
    )
    return {
        heading[1]: (heading[2], api[heading.start() : following.start() if following else None])
        for heading, following in zip(headings, headings[1:] + [None], strict=True)
    }


def signature_of(name: str, entry: str) -> ast.FunctionDef | None:
    """The signature shown under ``name``'s heading (``f(x: int) -> str``), parsed."""
    shown = re.search(r'<div class="doc-signature highlight">(.*?)</div>', entry, re.S)
    if shown is None:
        return None
    signature = text_of(shown[1]).strip()
    assert signature.startswith(name.rsplit(".", 1)[1] + "("), (name, signature)
    definition = ast.parse(f"def {signature}: pass").body[0]
    assert isinstance(definition, ast.FunctionDef)
    return definition


def assert_api_entries_have_signatures_and_examples(api: str) -> None:
    """Each public name has its entry, with its signature and an example: a function's
    parameters and result with their types, a class's constructor parameters with theirs."""
    entries = api_entries(api)
    for name in public_names():
        assert name in entries, f"{name} is public but has no entry on the API page"
        kind, entry = entries[name]
        examples = entry.split('<span class="doc-section-title">Examples:</span>', 1)
        assert len(examples) == 2 and ">>> " in text_of(examples[1]), f"{name}: no example"
        signature = signature_of(name, entry)
        if kind == "function":
            assert signature is not None, f"{name}: no signature on the API page"
        if signature is None:  # a class without constructor parameters of its own
            continue
        arguments = signature.args
        parameters = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        untyped = [a.arg for a in parameters if a.annotation is None and a.arg != "self"]
        assert not untyped, f"{name}: parameters without a type on the API page: {untyped}"
        if kind == "function":
            assert signature.returns is not None, f"{name}: no return type on the API page"


def assert_edit_links_resolve(site: Path) -> None:
    """Every page's "Edit on GitHub" opens a file of this repository on its default branch,
    main: a guide's is README.md (its one source), the API page's docs/api.md."""
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    source = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Source"]
    assert settings["repo_url"] == source
    prefix = f"{source}/edit/main/"
    edits = {}
    for page in site.rglob("*.html"):
        for link in re.findall(r'href="([^"]*/edit/[^"]*)"', page.read_text()):
            assert link.startswith(prefix), (page, link)
            edits[page.relative_to(site).as_posix()] = link.removeprefix(prefix)
    for page, path in edits.items():
        assert (ROOT / path).is_file(), f"{page}: Edit opens {path}, which is not in the repository"
    assert edits.get("api/index.html") == "docs/api.md", edits
    guides = [path for page, path in edits.items() if page.startswith("guides/")]
    assert guides and set(guides) == {"README.md"}, edits
    assert edits.get("changelog/index.html") == "CHANGELOG.md", edits


def test_links_and_anchors_are_checked():
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert settings["strict"] is True
    assert settings["validation"] == {
        "omitted_files": "warn",
        "absolute_links": "warn",
        "unrecognized_links": "warn",
        "anchors": "warn",
    }
