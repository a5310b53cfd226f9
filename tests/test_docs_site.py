"""The documentation site (mkdocs.yml, docs/) builds with --strict, and no link in it, nor in the
README, leads to a missing page or anchor."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.needs import unavailable

ROOT = Path(__file__).parent.parent


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mkdocs") is None:
        unavailable("mkdocs is not installed: pip install -e '.[docs]'")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "--site-dir", site],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    built = _build(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr
    return site


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("id", "name"):
            if found.get(name):
                self.ids.add(str(found[name]))
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))


def _parsed(page: Path) -> _Anchors:
    parser = _Anchors()
    parser.feed(page.read_text("utf-8"))
    return parser


def test_every_page_of_the_navigation_is_built(site: Path) -> None:
    for page in ("index", "concepts", "spec", "cli", "integrations", "ledger", "threat-model"):
        assert (site / f"{page}.html").is_file(), page


def test_every_internal_link_of_the_site_reaches_its_page_and_anchor(site: Path) -> None:
    pages = {page: _parsed(page) for page in site.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        if page.name == "404.html":  # served for any path, so its links start at the root
            continue
        for href in parsed.hrefs:
            link = urlsplit(href)
            if link.scheme or link.netloc:
                continue
            target = (page.parent / unquote(link.path)).resolve() if link.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_relative_to(site.resolve()) or not target.exists():
                broken.append(f"{page.name}: {href} (no such file)")
            elif link.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parsed(target).ids
                if unquote(link.fragment) not in ids:
                    broken.append(f"{page.name}: {href} (no such anchor)")
    assert broken == []


def test_every_readme_link_into_docs_reaches_its_page_and_anchor(site: Path) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", readme):
        link = urlsplit(target)
        if link.scheme or not link.path:
            continue
        if not (ROOT / link.path).exists():
            broken.append(f"{target} (no such file)")
        elif link.path.startswith("docs/") and link.fragment:
            page = site / Path(link.path).relative_to("docs").with_suffix(".html")
            if link.fragment not in _parsed(page).ids:
                broken.append(f"{target} (no such anchor)")
    assert broken == []


@pytest.mark.parametrize(
    ("link", "named"),
    [
        ("[nothing](spec.md#no-such-section)", "no-such-section"),  # a missing anchor
        ("[gone](../no-such-file.yml)", "no-such-file.yml"),  # a missing repository file
    ],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, link: str, named: str) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + f"\nSee {link}.\n")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert named in built.stderr
