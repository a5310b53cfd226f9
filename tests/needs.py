"""What a test does when something it needs is missing (a database, Chromium, root, a tool):
skip on a developer's machine, fail under ``CI=true``, where everything the suite uses is part
of the contract and a skip would pass a build that never ran the test."""

from __future__ import annotations

import os
import uuid
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def service_unavailable(service: str, error: BaseException) -> NoReturn:
    unavailable(f"{service} is not reachable on 127.0.0.1: {type(error).__name__}: {error}")


def unique(prefix: str) -> str:
    """A name no other test (or run) uses, for tables, schemas, keys."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"
