"""What the installed package carries besides code."""

from __future__ import annotations

from importlib import metadata, resources


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: without the marker, a user's type checker ignores every annotation here."""
    assert resources.files("completion_claim").joinpath("py.typed").is_file()


def test_the_declared_license_ships_with_its_text() -> None:
    assert metadata.metadata("completion-claim")["License-Expression"] == "Apache-2.0"
    license_files = metadata.files("completion-claim") or []
    assert any(path.name == "LICENSE" for path in license_files)
