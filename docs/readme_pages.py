"""MkDocs hook: the README's guides and the project's other Markdown files as pages.

README.md stays the one source of the guides: each `## ` section becomes a page under guides/
(numbered in README order), the text above the first one is the home page, and ARCHITECTURE.md,
CONTRIBUTING.md and CHANGELOG.md are copied in as they are. Headings inside fenced code blocks
(`#section ...` lines) are not headings.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
COPIED = {
    "architecture.md": "ARCHITECTURE.md",
    "contributing.md": "CONTRIBUTING.md",
    "changelog.md": "CHANGELOG.md",
}


def readme_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The README's introduction and its `## ` sections as (title, Markdown) pairs."""
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fence = None
    for line in text.splitlines(keepends=True):
        marker = re.match(r"\s*(```|~~~)", line)
        if marker:
            fence = None if fence == marker.group(1) else fence or marker.group(1)
        if fence is None and not marker and line.startswith("## "):
            sections.append((line[3:].strip(), []))
            line = "# " + line[3:]
        elif fence is None and not marker and line.startswith("###"):
            line = line[1:]  # one level up, below the page's own title
        (sections[-1][1] if sections else intro).append(line)
    return "".join(intro), [(title, "".join(lines)) for title, lines in sections]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def guide_pages() -> tuple[str, list[tuple[str, str, str]]]:
    """The home page's text and (title, page path, Markdown) of each guide."""
    intro, sections = readme_sections((ROOT / "README.md").read_text(encoding="utf-8"))
    pages = [
        (title, f"guides/{i:02d}-{slug(title)}.md", body)
        for i, (title, body) in enumerate(sections, 1)
    ]
    return intro, pages


def anchor_pages(pages: list[tuple[str, str, str]]) -> dict[str, str]:
    """Where each README anchor is on the site: the guide page of its section, from guides/
    (``05-batches.md``, or ``05-batches.md#sub`` for a heading inside one)."""
    where: dict[str, str] = {}
    for _, path, text in pages:
        name = path.removeprefix("guides/")
        for level, title in re.findall(r"^(#{1,3}) (.+)$", text, re.M):
            where.setdefault(slug(title), name if level == "#" else f"{name}#{slug(title)}")
    return where


def link_sections(body: str, own: str, where: dict[str, str], prefix: str) -> str:
    """``body`` with the README's links to another section's anchor (``](#batches-...)``)
    pointing at that section's page (``where``: ``anchor_pages``): on GitHub one page holds
    them all, here each is a page. ``own``: the body's page (its anchors stay); ``prefix``:
    from the body's folder to guides/."""

    def page_of(match: re.Match[str]) -> str:
        target = where.get(match[1])
        if target is None or target.split("#")[0] == own:
            return match[0]
        return f"]({prefix}{target})"

    return re.sub(r"\]\(#([a-z0-9_-]+)\)", page_of, body)


def on_config(config):
    _, pages = guide_pages()
    config["nav"] = [
        {"Home": "index.md"},
        {"Guides": [{title: path} for title, path, _ in pages]},
        {"API reference": "api.md"},
        {"Architecture": "architecture.md"},
        {"Contributing": "contributing.md"},
        {"Changelog": "changelog.md"},
    ]
    return config


def generated(config, path: str, content: str, source: str) -> File:
    """A page made at build time whose "Edit" link opens ``source`` (a path from the
    repository's root, which ``edit_uri`` in mkdocs.yml is relative to)."""
    page = File.generated(config, path, content=content)
    page.edit_uri = source
    return page


def on_files(files: Files, config) -> Files:
    for page in files.documentation_pages():  # docs/api.md, ...: the path from the root
        page.edit_uri = (Path(config["docs_dir"]).relative_to(ROOT) / page.src_uri).as_posix()
    intro, pages = guide_pages()
    guides = "\n".join(f"- [{title}]({path})" for title, path, _ in pages)
    where = anchor_pages(pages)
    home = link_sections(intro, "", where, "guides/")
    files.append(generated(config, "index.md", f"{home}\n## Guides\n\n{guides}\n", "README.md"))
    for _, path, body in pages:
        own = path.removeprefix("guides/")
        files.append(generated(config, path, link_sections(body, own, where, ""), "README.md"))
    for page, source in COPIED.items():
        files.append(generated(config, page, (ROOT / source).read_text(encoding="utf-8"), source))
    return files
