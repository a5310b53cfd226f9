"""The one place optional imports go through: only a missing optional package becomes the
one-line MissingExtra; anything else stays the defect it is."""

from __future__ import annotations

import importlib
import sys

import pytest

from completion_claim._optional import MissingExtra, needs_extra, require
from completion_claim.errors import UsageError


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


def test_only_real_extras_are_named() -> None:
    with pytest.raises(ValueError, match="no extra named 'signing'"):
        require("cryptography", extra="signing", for_what="signing")
