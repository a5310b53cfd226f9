"""What the installed package carries besides code."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata, resources
from pathlib import Path


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: without the marker, a user's type checker ignores every annotation here."""
    assert resources.files("completion_claim").joinpath("py.typed").is_file()


def test_the_declared_license_ships_with_its_text() -> None:
    assert metadata.metadata("completion-claim")["License-Expression"] == "Apache-2.0"
    license_files = metadata.files("completion-claim") or []
    assert any(path.name == "LICENSE" for path in license_files)


# --- the README as the package index shows it ---------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Markdown links and images [text](target "title"), and HTML href/src attributes.
LINK = re.compile(
    r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|(?:href|src)=\"([^\"]+)\""
)


def repository_url() -> str:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        url: str = tomllib.load(handle)["project"]["urls"]["Source"]
    return url


def readme_links() -> list[str]:
    return [markdown or html for markdown, html in LINK.findall(README)]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but '-' and '_' dropped,
    spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_has_links_and_every_one_is_absolute() -> None:
    """The package index shows the README away from the repository: a relative link, or an
    anchor of the page (the index gives headings no ids), leads nowhere there."""
    links = readme_links()
    assert len(links) >= 10
    relative = [link for link in links if not link.startswith(("https://", "mailto:"))]
    assert relative == []


def test_every_readme_link_into_the_repository_resolves() -> None:
    """Links into this repository name a file that exists, and a heading that it has."""
    base = repository_url()
    assert base.startswith("https://github.com/")
    into = [link for link in readme_links() if link.startswith(base + "/")]
    assert into
    for link in into:
        rest = link[len(base) + 1 :]
        kind, _, path = rest.partition("/main/")
        if kind not in ("blob", "tree"):
            assert rest in ("issues",), link
            continue
        path, _, anchor = path.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {github_slug(heading) for heading in headings}, link


def install_section(text: str) -> str:
    return text.split("## Install", 1)[1].split("\n## ", 1)[0]


def test_the_documentation_site_installs_as_the_readme_does() -> None:
    """One Install table and one set of commands: the site's home page (docs/index.md) shows
    what the README shows, which the test below holds to pyproject."""
    site = install_section((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    ours = install_section(README)

    def table(section: str) -> list[str]:
        return [line for line in section.splitlines() if line.startswith("|")]

    def commands(section: str) -> list[str]:
        return [line for line in section.splitlines() if line.startswith(("pip ", "pipx "))]

    assert table(site) == table(ours)
    assert commands(site) == commands(ours)
    assert commands(ours)


def test_every_extra_is_described_in_the_readme() -> None:
    """The Install section's table names each extra pyproject declares, and what it brings."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    section = install_section(README)
    rows = {
        cells[1].strip("` "): cells[2]
        for cells in (line.split("|") for line in section.splitlines() if line.startswith("| `"))
    }
    assert set(rows) == set(extras)
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        for requirement in requirements:
            name = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0]
            assert name.lower() in rows[extra].lower(), (extra, name)
