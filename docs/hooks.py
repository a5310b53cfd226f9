"""MkDocs hook: a page may link to a file of the repository outside docs/ (`../action.yml`),
which reads well on GitHub but has no page on the site. Such a link becomes its words, or a
link into the repository when `repo_url` is set; a link to a file that does not exist is left
alone, so the strict build still fails on it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.pages import Page

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    docs = Path(config.docs_dir).resolve()
    repository = Path(config.config_file_path).resolve().parent
    page_dir = (docs / page.file.src_path).parent

    def rewrite(link: re.Match[str]) -> str:
        words, target = link[1], link[2]
        if "://" in target:
            return link[0]
        resolved = (page_dir / target).resolve()
        if resolved.is_relative_to(docs) or not resolved.is_relative_to(repository):
            return link[0]
        if not resolved.exists():
            return link[0]
        if config.repo_url:
            relative = resolved.relative_to(repository).as_posix()
            return f"[{words}]({config.repo_url.rstrip('/')}/blob/main/{relative})"
        return words

    return _LINK.sub(rewrite, markdown)
