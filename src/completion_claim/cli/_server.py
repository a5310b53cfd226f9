"""What the gate's thin clients share: ``--server URL`` and ``--token-file FILE`` (or
``CLAIM_TOKEN``), and the calls to ``POST /v1/gate`` and ``/v1/gate/start``.

The client is imported only when a command is given ``--server``: the gate and its hooks run in
minimal agent sandboxes, where the HTTP library may not be installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._files import read_limited
from ..errors import UsageError

if TYPE_CHECKING:
    from ..service.client import GateAnswer, ServiceClient

TOKEN_ENV = "CLAIM_TOKEN"  # noqa: S105 - the variable's name, not a token
MAX_TOKEN_FILE_BYTES = 4096
# The service's answers about the work tree itself (outside the observe root, not a repository,
# git data that leads out of the root): the agent controls the work tree, so these are its to fix.
WORK_TREE_STATUSES = (403, 422)


class WorkTreeRefused(UsageError):
    """The service would not run the gate on this work tree; ``reason`` is its one line."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the gate service refused to judge this work tree: {reason}")


class StartNotAllowed(UsageError):
    """The service's token may not start sessions: the operator's side starts them."""


SERVER_OPTION = click.option(
    "--server",
    metavar="URL",
    help="Ask a claim serve (http://HOST:PORT or unix:///path.sock) to run the gate, under "
    "its operator's config and key.",
)
TOKEN_FILE_OPTION = click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"The service's bearer token (default: ${TOKEN_ENV}).",
)


def read_token(token_file: Path | None, environ: Mapping[str, str]) -> str | None:
    """The token from ``--token-file`` (its first line), else from ``CLAIM_TOKEN``, else None."""
    if token_file is not None:
        text = read_limited(str(token_file), MAX_TOKEN_FILE_BYTES).decode("utf-8", "replace")
        lines = text.strip().splitlines()
        if not lines:
            raise UsageError(f"--token-file {token_file}: the file is empty")
        return lines[0].strip()
    return environ.get(TOKEN_ENV) or None


def refuse_config_with_server(config_path: Path | None) -> None:
    if config_path is not None:
        raise UsageError(
            "--config and --server: with --server the service's operator config is used"
        )


def gate_client(server: str, token_file: Path | None) -> ServiceClient:
    from ..service.client import GATE_TIMEOUT_S, ServiceClient  # noqa: PLC0415

    return ServiceClient(server, read_token(token_file, os.environ), GATE_TIMEOUT_S)


def ask_gate(
    server: str,
    token_file: Path | None,
    repo: Path,
    outcome: str,
    session: str | None,
    task_id: str | None,
) -> GateAnswer:
    """The service's decision on the work tree at ``repo``."""
    from ..service.client import ServiceRefused, gate  # noqa: PLC0415

    with gate_client(server, token_file) as client:
        try:
            return gate(client, str(repo.absolute()), outcome, session, task_id)
        except ServiceRefused as refused:
            # A token that may not run the gate is no fault of the work tree's.
            if refused.status in WORK_TREE_STATUSES and refused.scope is None:
                raise WorkTreeRefused(refused.error) from None
            raise


def ask_start(
    server: str, token_file: Path | None, repo: Path, session: str | None
) -> tuple[str, int]:
    """Have the service take the session's baselines; the work tree's root it took them for
    and the start's ledger index."""
    from ..service.client import ServiceRefused, gate_start  # noqa: PLC0415

    with gate_client(server, token_file) as client:
        try:
            return gate_start(client, str(repo.absolute()), session)
        except ServiceRefused as refused:
            if refused.scope is not None:
                raise StartNotAllowed(
                    "the service took no start: this token may not start sessions (it lacks "
                    "the scope 'start'); the operator's side starts them, with a start-scoped "
                    "token the agent cannot read"
                ) from None
            raise
