"""The ``claim`` command. Commands stay thin; this module alone maps errors to exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click

from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ..gate.config import ConfigError, InvalidPolicy
from ..service.ledger_errors import LedgerError, LedgerTampered

EXIT_VERIFIED = 0
EXIT_UNVERIFIED = 1
EXIT_REFUTED = 2
EXIT_INVALID = 3
EXIT_USAGE = 4
EXIT_OBSERVATION_FAILED = 5

_EXIT_FOR_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (InvalidDocument, EXIT_INVALID),
    (InvalidPolicy, EXIT_INVALID),
    (ConfigError, EXIT_USAGE),
    (ObservationFailed, EXIT_OBSERVATION_FAILED),
    (LedgerTampered, EXIT_REFUTED),
    (LedgerError, EXIT_OBSERVATION_FAILED),
    (UsageError, EXIT_USAGE),
    (ClaimError, EXIT_USAGE),
    (click.UsageError, EXIT_USAGE),
    (click.ClickException, EXIT_USAGE),
    (click.Abort, EXIT_USAGE),
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="completion-claim", prog_name="claim")
def app() -> None:
    """Decide whether an agent's claim of completion is proven by observations of the world.

    \b
    Exit codes: 0 verified (or the command succeeded), 1 unverified, 2 refuted (or a
    ledger contradicts its signed tree heads), 3 invalid claim or policy, 4 usage or
    internal error, 5 observation failed (or a ledger cannot be reached or read).
    """


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code; never raises, never prints a traceback."""
    try:
        result = app.main(
            args=list(argv) if argv is not None else None, prog_name="claim", standalone_mode=False
        )
    except click.exceptions.Exit as done:  # --help, --version
        return done.exit_code
    except Exception as error:  # the one place errors become exit codes
        code = next((c for kind, c in _EXIT_FOR_ERROR if isinstance(error, kind)), None)
        if code is None:
            if os.environ.get("CLAIM_DEBUG"):
                raise
            code = EXIT_USAGE
            message = f"internal error: {type(error).__name__}: {error}"
        elif isinstance(error, click.ClickException):
            message = error.format_message()
        else:
            message = str(error) or type(error).__name__
        click.echo(f"claim: {_one_line(message)}", err=True)
        return code
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())


def _one_line(message: str) -> str:
    return " ".join(message.split())


# Commands register themselves on ``app`` when imported.
from . import (  # noqa: E402, F401
    capture_cmd,
    claim_cmd,
    gate_cmd,
    hook_cmd,
    ledger_cmd,
    observe_cmd,
    observe_dom_cmd,
    observe_endpoint_cmd,
    observe_readback_cmd,
    observe_test_run_cmd,
    report_cmd,
    run_cmd,
    serve_cmd,
    trust_cmd,
    verify_cmd,
)
