"""Bearer tokens: one per agent or CI runner, stored hashed.

The token file holds JSON lines, one per token::

    {"name": "ci-runner-1", "sha256": "<64 hex digits: SHA-256 of the token's UTF-8 bytes>",
     "scopes": ["gate"]}

Blank lines are ignored. The token itself is never stored: ``claim token add`` prints it once.
A token is long and random (``secrets.token_urlsafe``), so an unsalted SHA-256 is enough to keep
the file from being a list of passwords. Removing a name's line (``claim token revoke``) revokes
its token; the service rereads the file when it changes, so no restart is needed.

A token may do what its scopes say: ``gate`` (``POST /v1/gate``), ``start`` (``POST
/v1/gate/start``: take a session's start record, which every later gate of the session measures
from) and ``post`` (``POST /v1/claims``: record a claim the requester decided how to observe).
A new token, and a line without ``scopes`` (a file written before scopes), has
:data:`DEFAULT_SCOPES`: ``gate`` alone. An agent's hook holds its token; an agent that could
start its own session could move its own base, and one that could post could record its own
"independent" evidence beside the gate's refusal. ``start`` and ``post`` are given by name.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._files import read_limited, write_atomic
from .._json import decode_bytes, dumps, loads
from ..errors import ClaimError, InvalidDocument

MAX_TOKEN_FILE_BYTES = 1024 * 1024
TOKEN_BYTES = 32  # of randomness; ``token_urlsafe`` writes them as 43 characters

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@/+-]{0,63}\Z", re.ASCII)
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}\Z", re.ASCII)


class TokenFileError(ClaimError):
    """The token file cannot be read or holds a bad line; names FILE:LINE."""


class TokenRejected(ClaimError):
    """A request's credentials are missing, malformed or unknown."""


class ScopeMissing(ClaimError):
    """A request asked for something its token's scopes do not allow; ``scope`` names what."""

    def __init__(self, message: str, scope: str) -> None:
        self.scope = scope
        super().__init__(message)


SCOPE_USES = {
    "gate": "POST /v1/gate runs the gate",
    "start": "POST /v1/gate/start takes a session's start, which only the operator's side may",
    "post": "POST /v1/claims records a claim",
}
SCOPES = tuple(SCOPE_USES)
DEFAULT_SCOPES = ("gate",)
"""What ``claim token add`` gives without ``--scope``, and what a line without ``scopes`` has."""


@dataclass(frozen=True, slots=True)
class TokenEntry:
    name: str
    digest: bytes  # SHA-256 of the token
    scopes: tuple[str, ...] = DEFAULT_SCOPES


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise TokenFileError(
            f"token name {name[:70]!r} is not 1 to 64 letters, digits or ._@/+- "
            "(starting with a letter or digit)"
        )
    return name


def read_tokens(path: Path) -> tuple[TokenEntry, ...]:
    """Every entry of the file; any problem is one line naming FILE:LINE."""
    try:
        text = decode_bytes(read_limited(str(path), MAX_TOKEN_FILE_BYTES), MAX_TOKEN_FILE_BYTES)
    except ClaimError as error:
        raise TokenFileError(f"token file {path}: {error}") from None
    entries: list[TokenEntry] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = _parse_line(line)
        except (InvalidDocument, TokenFileError) as error:
            raise TokenFileError(f"{path}:{number}: {_problem(error)}") from None
        if entry.name in seen:
            raise TokenFileError(f"{path}:{number}: the name {entry.name!r} appears twice")
        seen.add(entry.name)
        entries.append(entry)
    return tuple(entries)


def _problem(error: ClaimError) -> str:
    if isinstance(error, InvalidDocument):
        return ": ".join(part for part in (error.path, error.problem) if part)
    return str(error)


def _parse_line(line: str) -> TokenEntry:
    value = loads(line)
    if not isinstance(value, dict) or not {"name", "sha256"} <= set(value) <= _MEMBERS:
        raise TokenFileError(
            'expected {"name": "...", "sha256": "<64 hex digits>"} and optionally "scopes"'
        )
    name, digest = value["name"], value["sha256"]
    if not isinstance(name, str):
        raise TokenFileError("name: expected a string")
    if not isinstance(digest, str) or not _HEX_DIGEST.match(digest):
        raise TokenFileError("sha256: expected 64 lowercase hex digits")
    scopes = value.get("scopes", DEFAULT_SCOPES)
    if not isinstance(scopes, list | tuple) or not all(isinstance(s, str) for s in scopes):
        raise TokenFileError("scopes: expected a list of strings")
    return TokenEntry(check_name(name), bytes.fromhex(digest), check_scopes(scopes))


_MEMBERS = frozenset(("name", "sha256", "scopes"))


def check_scopes(scopes: Sequence[str]) -> tuple[str, ...]:
    """The scopes in their canonical order; an unknown or missing one is named (a typo must not
    leave a token able to do less, or more, than the operator meant)."""
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown:
        raise TokenFileError(
            f"scopes: unknown scope {unknown[0][:40]!r} (expected {', '.join(SCOPES)})"
        )
    if not scopes:
        raise TokenFileError(f"scopes: empty (expected some of {', '.join(SCOPES)})")
    return tuple(scope for scope in SCOPES if scope in scopes)


def add_token(path: Path, name: str, scopes: Sequence[str] = DEFAULT_SCOPES) -> str:
    """Make a token for ``name`` with ``scopes``, append its hashed entry to the file (created
    when missing, always left mode 0600) and return the token, which nothing else keeps."""
    check_name(name)
    scopes = check_scopes(scopes)
    existing = b""
    if path.exists():
        entries = read_tokens(path)  # refuses to add to a file that is already broken
        if any(entry.name == name for entry in entries):
            raise TokenFileError(f"{path}: the name {name!r} already has a token")
        existing = read_limited(str(path), MAX_TOKEN_FILE_BYTES)
        if existing and not existing.endswith(b"\n"):
            existing += b"\n"
    token = secrets.token_urlsafe(TOKEN_BYTES)
    entry = {"name": name, "sha256": token_digest(token).hex(), "scopes": list(scopes)}
    write_atomic(path, existing + (dumps(entry) + "\n").encode("utf-8"), mode=0o600)
    return token


def revoke_token(path: Path, name: str) -> None:
    """Remove ``name``'s line from the file (every other line kept as it was); a name the file
    does not hold is an error, so a typo never reads as a revocation."""
    read_tokens(path)  # refuses to rewrite a file that is already broken
    text = read_limited(str(path), MAX_TOKEN_FILE_BYTES).decode("utf-8")
    kept = [
        line for line in text.splitlines() if not line.strip() or _parse_line(line).name != name
    ]
    if len(kept) == len(text.splitlines()):
        raise TokenFileError(f"{path}: no token named {name!r}")
    write_atomic(path, "".join(line + "\n" for line in kept).encode("utf-8"), mode=0o600)


class TokenStore:
    """The service's view of the token file, reread whenever the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._entries: tuple[TokenEntry, ...] = ()
        self._refresh()

    def _refresh(self) -> tuple[TokenEntry, ...]:
        try:
            info = os.stat(self.path)
        except OSError as exc:
            raise TokenFileError(f"token file {self.path}: {exc.strerror or exc}") from None
        if info.st_mode & 0o022:
            # Whoever can write the file can give themselves a token under any name.
            raise TokenFileError(
                f"token file {self.path}: writable by others than its owner "
                f"(mode {stat.S_IMODE(info.st_mode):o}); chmod go-w it"
            )
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        if stamp != self._seen:
            # Read before recording the stamp: a broken file is reported on every request
            # until it is fixed, never silently replaced by an empty list.
            self._entries = read_tokens(self.path)
            self._seen = stamp
        return self._entries

    def authorize(self, authorization: str | None, scope: str) -> str:
        """The name whose token the header carries when that token has ``scope``; else
        TokenRejected (no such token) or ScopeMissing."""
        entry = self._entry(authorization)
        if scope not in entry.scopes:
            message = (
                f"token {entry.name!r} lacks the scope {scope!r}: {SCOPE_USES[scope]}; the "
                f"operator gives it by name (claim token add NAME --scope {scope}, or "
                f'"{scope}" in the "scopes" of its line in the token file; a line without '
                f"scopes has {', '.join(DEFAULT_SCOPES)} only)"
            )
            raise ScopeMissing(message, scope)
        return entry.name

    def authenticate(self, authorization: str | None) -> str:
        """The name whose token the ``Authorization`` header carries, or TokenRejected."""
        return self._entry(authorization).name

    def _entry(self, authorization: str | None) -> TokenEntry:
        if authorization is None or not authorization.strip():
            raise TokenRejected("missing bearer token: send 'Authorization: Bearer <token>'")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise TokenRejected("malformed Authorization header: expected 'Bearer <token>'")
        digest = token_digest(token)
        found: TokenEntry | None = None
        for entry in self._refresh():
            # Every entry is compared, each in constant time, so the answer's timing says
            # nothing about which entry (or how much of one) matched.
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        if found is None:
            raise TokenRejected("unknown bearer token")
        return found
