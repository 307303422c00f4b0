"""The documentation site (mkdocs.yml) builds with warnings as errors (--strict: a broken internal
link or #anchor, a page left out of the navigation, an API name mkdocstrings cannot resolve), has
one page per README guide, and its API reference documents the public names from the docstrings
and _core.pyi."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
API_NAMES = (
    "build",
    "build_many",
    "ExternalCOp",
    "pytensor_op",
    "Diagnostic",
    "tensor",
    "CompileError",
    "LinkError",
    "LoadError",
    "SectionError",
    "SectionDecodeError",
)


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
    for name in API_NAMES:
        assert f'id="libsection.{name}"' in api or f'id="libsection.pytensor.{name}"' in api, name
    # A docstring that exists only in the stub of the compiled module.
    assert "A problem found in a section file" in api
    assert_edit_links_resolve(site)


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
