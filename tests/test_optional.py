"""The one place optional imports go through: only a missing optional package becomes the
one-line MissingExtra; anything else stays the defect it is."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path

import pytest

from completion_claim._optional import MissingExtra, needs_extra, require
from completion_claim.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


def test_a_missing_optional_package_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(MissingExtra) as caught:
        require("pymysql", extra="observe", for_what="a MariaDB/MySQL readback")
    assert isinstance(caught.value, UsageError)  # exit 4
    assert str(caught.value) == (
        "a MariaDB/MySQL readback needs PyMySQL, which is not installed: "
        "pip install 'completion-claim[observe]'"
    )


def test_a_submodule_counts_as_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat", None)
    with pytest.raises(MissingExtra, match=r"needs cryptography, .*completion-claim\[sign\]"):
        require("cryptography.hazmat", extra="sign", for_what="signing")


def test_an_import_error_of_anything_else_is_not_disguised() -> None:
    """A broken import of this package's own module is a defect: it must not read as "install
    the extra"."""
    with pytest.raises(ModuleNotFoundError), needs_extra("serve", "claim serve"):
        importlib.import_module("completion_claim.no_such_module")


def test_every_extra_named_in_the_code_is_declared() -> None:
    """A misspelt extra would send the user to install something that does not exist."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        declared = set(tomllib.load(handle)["project"]["optional-dependencies"]) - {"dev"}
    named = set()
    for path in (ROOT / "src").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        named |= set(re.findall(r"needs_extra\(\s*\"(\w+)\"", text))
        named |= set(re.findall(r"\bextra=\"(\w+)\"", text))
    assert named
    assert named <= declared
