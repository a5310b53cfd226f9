"""Run the real ``claim`` command in a subprocess where some installed packages cannot be
imported, as on a machine where their extra was never installed.

A ``sitecustomize`` module, found first on ``PYTHONPATH``, puts None in ``sys.modules`` for each
name in ``$CLAIM_TEST_UNIMPORTABLE`` before anything else runs: Python then refuses the import
with the same ModuleNotFoundError (``name`` set to the module) as for a package that is absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SITECUSTOMIZE = """\
import os
import sys

for name in os.environ["CLAIM_TEST_UNIMPORTABLE"].split(","):
    sys.modules[name] = None
"""
# Every optional package, for "works with none of them".
EVERY_OPTIONAL = (
    "alembic", "cryptography", "fastapi", "httpx", "jinja2", "psycopg", "pymysql", "redis",
    "sqlalchemy", "sqlglot", "starlette", "uvicorn",
)  # fmt: skip


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_without(modules: Sequence[str], args: Sequence[str], cwd: Path, stdin: str = "") -> Result:
    """``claim ARGS`` (the installed package, in a new interpreter) with ``modules``
    unimportable."""
    site = cwd / "unimportable-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "CLAIM_TEST_UNIMPORTABLE": ",".join(modules),
    }
    env.pop("CLAIM_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-m", "completion_claim", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr)


def missing_extra_line(extra: str, distribution: str) -> str:
    """The tail of the one line a command prints when ``distribution`` (of ``extra``) is
    missing."""
    return f"needs {distribution}, which is not installed: pip install 'completion-claim[{extra}]'"
