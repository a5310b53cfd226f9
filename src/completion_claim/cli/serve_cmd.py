"""``claim serve`` (the verification service on uvicorn) and ``claim token add|list|revoke``.

The service's libraries (FastAPI, uvicorn, SQLAlchemy) are the optional ``serve`` extra, so they
are imported inside the commands: every other command works without them.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import ipaddress
import os
import signal
import socket
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from .._json import DEFAULT_MAX_BYTES
from .._optional import needs_extra
from ..errors import UsageError
from ..model import BUILTIN_POLICY
from ..observe.values import redact_url
from ..service.settings import DEFAULT_MERGE_DELAY_S
from . import EXIT_VERIFIED, app
from ._output import emit_json, json_option
from .verify_cmd import read_policy

DATA_DIR_NAME = "completion-claim"
DEFAULT_LEDGER_NAME = "ledger.sqlite"
DEFAULT_KEY_NAME = "service-key.pem"
LOG_LEVELS = ("debug", "info", "warning", "error")
SOCKET_MODE = 0o660  # the service's user and group: put requesters in the group to let them in


# --- claim token --------------------------------------------------------------------------------


@app.group("token")
def token_group() -> None:
    """Bearer tokens for `claim serve --tokens FILE`: one per agent or CI runner, each with its
    scopes (gate, start, post)."""


_TOKENS_OPTION = click.option(
    "--tokens",
    "tokens_path",
    required=True,
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The token file (JSON lines of name, SHA-256 and scopes; created mode 0600 when missing).",
)


@token_group.command("add")
@click.argument("name")
@_TOKENS_OPTION
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(("gate", "start", "post")),
    help="What the token may do (repeatable): gate (POST /v1/gate), start (POST "
    "/v1/gate/start), post (POST /v1/claims). Default: gate only.",
)
@json_option("Print {name, path, token, scopes} as JSON.")
def token_add_command(name: str, tokens_path: Path, scopes: tuple[str, ...], as_json: bool) -> int:
    """Make a token for NAME and print it once; the file keeps only its SHA-256.

    The service records NAME with every claim posted, gate run and start made with the token.
    Give `start` and `post` only to the operator's side (CI, the orchestrator that launches the
    agent), never to the token an agent's hook holds: the start fixes the base the agent's work
    is measured from, and a post records a claim whose evidence its sender chose.
    `claim token revoke NAME` revokes it; the service rereads the file.
    """
    from ..service.tokens import DEFAULT_SCOPES, add_token, check_scopes  # noqa: PLC0415

    chosen = check_scopes(scopes or DEFAULT_SCOPES)
    token = add_token(tokens_path, name, chosen)
    if as_json:
        emit_json({"name": name, "path": str(tokens_path), "token": token, "scopes": list(chosen)})
        return EXIT_VERIFIED
    click.echo(
        f"added token {name!r} ({', '.join(chosen)}) to {tokens_path}; it is shown only this once:",
        err=True,
    )
    click.echo(token)
    return EXIT_VERIFIED


@token_group.command("list")
@_TOKENS_OPTION
@json_option("Print {path, tokens: [{name, scopes}]} as JSON.")
def token_list_command(tokens_path: Path, as_json: bool) -> int:
    """List the file's token names and their scopes (never a token or its digest)."""
    from ..service.tokens import read_tokens  # noqa: PLC0415

    entries = read_tokens(tokens_path)
    if as_json:
        tokens = [{"name": entry.name, "scopes": list(entry.scopes)} for entry in entries]
        emit_json({"path": str(tokens_path), "tokens": tokens})
        return EXIT_VERIFIED
    for entry in entries:
        click.echo(f"{entry.name}\t{','.join(entry.scopes)}")
    return EXIT_VERIFIED


@token_group.command("revoke")
@click.argument("name")
@_TOKENS_OPTION
@json_option("Print {name, path, revoked} as JSON.")
def token_revoke_command(name: str, tokens_path: Path, as_json: bool) -> int:
    """Remove NAME's token from the file; a running service refuses it from its next request."""
    from ..service.tokens import revoke_token  # noqa: PLC0415

    revoke_token(tokens_path, name)
    if as_json:
        emit_json({"name": name, "path": str(tokens_path), "revoked": True})
        return EXIT_VERIFIED
    click.echo(f"revoked token {name!r} in {tokens_path}")
    return EXIT_VERIFIED


# --- claim serve --------------------------------------------------------------------------------


@app.command("serve")
@click.option(
    "--ledger",
    "ledger_url",
    metavar="URL",
    envvar="CLAIM_SERVE_LEDGER",
    help="sqlite:///FILE, a file path, or postgresql://... (also $CLAIM_SERVE_LEDGER, which keeps "
    "a password off the command line). "
    "Default: $XDG_DATA_HOME/completion-claim/ledger.sqlite, created on first start.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="0: any free."
)
@click.option(
    "--socket",
    "socket_path",
    metavar="PATH",
    type=click.Path(path_type=Path),
    help="Listen on this Unix socket (mode 0660) instead of TCP.",
)
@click.option(
    "--tokens",
    "tokens_path",
    metavar="FILE",
    envvar="CLAIM_SERVE_TOKENS",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Require a bearer token from this file (`claim token add`) to post claims "
    "(also $CLAIM_SERVE_TOKENS).",
)
@click.option(
    "--key",
    "key_path",
    metavar="FILE",
    envvar="CLAIM_SERVE_KEY",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The service's Ed25519 key (`claim keygen`; also $CLAIM_SERVE_KEY); required with "
    "--ledger. Default: service-key.pem beside the default ledger, generated on first start.",
)
@click.option(
    "--policy",
    "policy_path",
    metavar="FILE",
    help="The operator's policy (JSON). Default: built-in.",
)
@click.option(
    "--observe-root",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Enable POST /v1/gate for repositories under DIR.",
)
@click.option(
    "--gate-config",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The operator's claim.toml for POST /v1/gate.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    help="Largest request body accepted, in bytes. Default: 1 MiB.",
)
@click.option(
    "--max-merge-delay",
    "merge_delay",
    metavar="SECONDS",
    type=click.FloatRange(0, 60),
    default=DEFAULT_MERGE_DELAY_S,
    show_default=True,
    help="Longest an acknowledged claim (durable, with its index) waits for a signed tree head "
    "covering it; a proof asked for sooner is waited for. 0: each answer waits for its head.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default="info",
    show_default=True,
    help="The least severe log line written to stderr (info: the start, each gate step and "
    "every unexpected error; no line per request).",
)
@click.option(
    "--access-log",
    is_flag=True,
    help="Also log one line per request: method, path, status, duration.",
)
@click.option(
    "--log-format",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="json: one JSON object per line (time, level, logger, message; an access line adds "
    "method, path, status, duration_ms).",
)
def serve_command(
    ledger_url: str | None,
    host: str,
    port: int,
    socket_path: Path | None,
    tokens_path: Path | None,
    key_path: Path | None,
    policy_path: str | None,
    observe_root: Path | None,
    gate_config: Path | None,
    max_bytes: int | None,
    merge_delay: float,
    log_level: str,
    access_log: bool,
    log_format: str,
) -> int:
    """Run the verification service until SIGINT or SIGTERM.

    Prints one line with the URL it listens on once it is ready. Without --tokens, anyone who
    can connect may post claims, so it then listens on a loopback address only.
    """
    gc.enable()  # the one command that runs for days: cycles must be collected (cli.main)
    with needs_extra("serve", "claim serve"):
        import uvicorn  # noqa: PLC0415

        from ..service.app import create_app  # noqa: PLC0415
        from ..service.ledger import Ledger  # noqa: PLC0415
        from ..service.settings import DEFAULT_MAX_BODY_BYTES, ServiceSettings  # noqa: PLC0415

    if socket_path is None and tokens_path is None and not is_loopback(host):
        raise UsageError(
            f"--host {host}: refusing to accept claims from the network without --tokens FILE"
        )
    if (observe_root is None) != (gate_config is None):
        raise UsageError(
            "--observe-root and --gate-config go together: the gate runs the operator's "
            "claim.toml on repositories under the observe root"
        )
    if ledger_url is None:
        # A key given is the one the default ledger is signed with: none is made beside it.
        ledger_url, default_key = default_ledger(os.environ, make_key=key_path is None)
        key_path = key_path or default_key
    elif key_path is None:
        raise UsageError(
            "--ledger needs --key FILE: every process serving one ledger signs with one key"
        )
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    key = load_signing_key(str(key_path))
    policy = read_policy(policy_path, DEFAULT_MAX_BYTES)
    settings = ServiceSettings(
        ledger_url=ledger_url,
        key_path=key_path,
        tokens_path=tokens_path,
        max_body_bytes=max_bytes or DEFAULT_MAX_BODY_BYTES,
        observe_root=observe_root,
        gate_config=gate_config,
        policy=BUILTIN_POLICY if policy is None else policy,
        merge_delay_s=merge_delay,
    )
    if observe_root is not None:
        # A claim.toml the gate could not run would otherwise fail every request, as a 500.
        from ..service.gate_service import operator_config  # noqa: PLC0415

        operator_config(settings, os.environ)
    ledger = Ledger.open(ledger_url, key, merge_delay=settings.merge_delay_s)
    try:
        application = create_app(settings, ledger)
        with _listening(host, port, socket_path) as (listener, url):
            ready = f"claim serve: listening on {url} (ledger {redact_url(ledger_url)})"
            config = uvicorn.Config(
                application,
                lifespan="off",
                log_level=log_level,
                # The app writes the access log itself (service.metrics), with the duration.
                access_log=False,
                log_config=_log_config(log_level, access_log, log_format),
            )
            _server_class()(config, ready).run(sockets=[listener])
    finally:
        ledger.close()
    return EXIT_VERIFIED


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (an unknown name is not)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos
    )


def default_ledger(environ: Mapping[str, str], *, make_key: bool = True) -> tuple[str, Path]:
    """The SQLite ledger under the user's data folder, and its key file (made on first start,
    unless ``make_key`` is false)."""
    from ..trust.keys import SigningKey, write_private_key  # noqa: PLC0415

    base = environ.get("XDG_DATA_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    folder = root / DATA_DIR_NAME
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {folder}: {exc.strerror or exc}") from None
    key_path = folder / DEFAULT_KEY_NAME
    if make_key and not key_path.exists():
        with contextlib.suppress(UsageError):  # another process made it first: use theirs
            write_private_key(str(key_path), SigningKey.generate())
    return f"sqlite:///{folder / DEFAULT_LEDGER_NAME}", key_path


@contextlib.contextmanager
def _listening(
    host: str, port: int, socket_path: Path | None
) -> Iterator[tuple[socket.socket, str]]:
    """A bound socket handed to uvicorn (so ``--port 0`` prints the port really bound) and the
    URL it is reached at."""
    if socket_path is not None:
        with _unix_socket(socket_path) as listener:
            # The form ``--server`` takes (service.client): unix:// and the absolute path.
            yield listener, f"unix://{socket_path.absolute()}"
        return
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise UsageError(f"--host {host}: {exc.strerror or exc}") from None
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except OSError as exc:
        listener.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound_host, bound_port = listener.getsockname()[:2]
    shown = f"[{bound_host}]" if family == socket.AF_INET6 else bound_host
    with listener:
        yield listener, f"http://{shown}:{bound_port}"


@contextlib.contextmanager
def _unix_socket(path: Path) -> Iterator[socket.socket]:
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise UsageError(f"--socket {path}: exists and is not a socket; refusing to replace it")
        if _answers(path):
            raise UsageError(f"--socket {path}: another service is listening on it")
        path.unlink()  # a socket file left by a service that stopped without cleaning up
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        os.chmod(path, SOCKET_MODE)
    except OSError as exc:
        listener.close()
        raise UsageError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    try:
        with listener:
            yield listener
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:  # refused: a socket file nobody listens on any more
            return False
    return True


def _log_config(level: str, access_log: bool, log_format: str) -> dict[str, Any]:
    """uvicorn's logging, every line on stderr: stdout carries the ready line alone, so a
    script can read the URL from it. The service's own log (each gate step, the details of an
    unexpected error that the client is not shown) goes beside uvicorn's; the access log is off
    unless asked for, whatever the level, since a line per request drowns the rest."""
    from uvicorn.config import LOGGING_CONFIG  # noqa: PLC0415

    from ..service.metrics import ACCESS_LOGGER  # noqa: PLC0415

    config = copy.deepcopy(LOGGING_CONFIG)
    if log_format == "json":
        json_formatter = {"()": "completion_claim.service.logs.JsonFormatter"}
        config["formatters"] = {"default": json_formatter, "access": json_formatter}
    config["loggers"]["completion_claim"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    config["loggers"][ACCESS_LOGGER] = {
        "handlers": ["default"] if access_log else [],
        "level": "INFO" if access_log else "CRITICAL",
        "propagate": False,
    }
    return config


def _server_class() -> type[Any]:
    import uvicorn  # noqa: PLC0415

    class Server(uvicorn.Server):
        """uvicorn's server, announcing readiness and treating SIGINT/SIGTERM as a clean stop."""

        def __init__(self, config: uvicorn.Config, ready_line: str) -> None:
            super().__init__(config)
            self.ready_line = ready_line

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                click.echo(self.ready_line)  # flushed: click.echo flushes stdout

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn re-raises the signal once it has shut down, which would end the process
            # by that signal; the operator asked for a stop, so it ends as a clean exit 0.
            originals = {
                sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                yield
            finally:
                for sig, handler in originals.items():
                    signal.signal(sig, handler)

    return Server
