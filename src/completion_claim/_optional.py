"""The one place an optional dependency is imported from: a missing one names its extra.

The core (``claim verify``, ``new``, ``mutate``, ``capture-git``, ``observe test-run``, a SQLite
readback by table and key) needs only click and the standard library. Everything else comes with
an extra, and every import of it is written inside :func:`needs_extra` (or in a module only
imported inside it, as the service's are), so that a user without the extra reads one line
saying what to install, never ``No module named ...``::

    with needs_extra("sign", "signing"):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

The one import allowed to fail quietly is ``observe.values.libpq_params``'s: without psycopg a
postgresql:// URL is shown by its scheme alone, and a readback needing psycopg has asked first.

Only an ImportError about a package listed in :data:`DISTRIBUTIONS` is translated: one about
this package's own modules is a defect and stays an internal error.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import UsageError

# The top-level module of each optional dependency, and the distribution pip installs it from.
DISTRIBUTIONS = {
    "alembic": "alembic",
    "cryptography": "cryptography",
    "fastapi": "fastapi",
    "httpx": "httpx",
    "jinja2": "Jinja2",
    "playwright": "playwright",
    "psycopg": "psycopg",
    "pymysql": "PyMySQL",
    "redis": "redis",
    "sqlalchemy": "SQLAlchemy",
    "sqlglot": "sqlglot",
    "starlette": "starlette",
    "uvicorn": "uvicorn",
}


class MissingExtra(UsageError):
    """An optional dependency is not installed; ``str()`` names the extra that brings it."""

    def __init__(self, distribution: str, extra: str, for_what: str) -> None:
        self.distribution = distribution
        self.extra = extra
        super().__init__(
            f"{for_what} needs {distribution}, which is not installed: "
            f"pip install 'completion-claim[{extra}]'"
        )


@contextmanager
def needs_extra(extra: str, for_what: str) -> Iterator[None]:
    """Imports made in the block come from ``extra``; ``for_what`` opens the message (e.g.
    "signing", "a PostgreSQL readback"). ``extra`` is one pyproject.toml declares (a test
    checks every call)."""
    try:
        yield
    except ImportError as error:
        distribution = DISTRIBUTIONS.get((error.name or "").partition(".")[0])
        if distribution is None:
            raise
        raise MissingExtra(distribution, extra, for_what) from None


def require(module: str, *, extra: str, for_what: str) -> None:
    """Fail with :class:`MissingExtra` now, before any work, unless ``module`` imports."""
    with needs_extra(extra, for_what):
        importlib.import_module(module)
