"""Bearer tokens: one per agent or CI runner, stored hashed.

The token file holds JSON lines, one per token::

    {"name": "ci-runner-1", "sha256": "<64 hex digits: SHA-256 of the token's UTF-8 bytes>"}

Blank lines are ignored. The token itself is never stored: ``claim token add`` prints it once.
A token is long and random (``secrets.token_urlsafe``), so an unsalted SHA-256 is enough to keep
the file from being a list of passwords. Removing a name's line revokes its token; the service
rereads the file when it changes, so no restart is needed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
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


@dataclass(frozen=True, slots=True)
class TokenEntry:
    name: str
    digest: bytes  # SHA-256 of the token


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
    if not isinstance(value, dict) or set(value) != {"name", "sha256"}:
        raise TokenFileError('expected {"name": "...", "sha256": "<64 hex digits>"}')
    name, digest = value["name"], value["sha256"]
    if not isinstance(name, str):
        raise TokenFileError("name: expected a string")
    if not isinstance(digest, str) or not _HEX_DIGEST.match(digest):
        raise TokenFileError("sha256: expected 64 lowercase hex digits")
    return TokenEntry(check_name(name), bytes.fromhex(digest))


def add_token(path: Path, name: str) -> str:
    """Make a token for ``name``, append its hashed entry to the file (created when missing,
    always left mode 0600) and return the token, which nothing else keeps."""
    check_name(name)
    existing = b""
    if path.exists():
        entries = read_tokens(path)  # refuses to add to a file that is already broken
        if any(entry.name == name for entry in entries):
            raise TokenFileError(f"{path}: the name {name!r} already has a token")
        existing = read_limited(str(path), MAX_TOKEN_FILE_BYTES)
        if existing and not existing.endswith(b"\n"):
            existing += b"\n"
    token = secrets.token_urlsafe(TOKEN_BYTES)
    line = dumps({"name": name, "sha256": token_digest(token).hex()}) + "\n"
    write_atomic(path, existing + line.encode("utf-8"), mode=0o600)
    return token


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

    def authenticate(self, authorization: str | None) -> str:
        """The name whose token the ``Authorization`` header carries, or TokenRejected."""
        if authorization is None or not authorization.strip():
            raise TokenRejected("missing bearer token: send 'Authorization: Bearer <token>'")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise TokenRejected("malformed Authorization header: expected 'Bearer <token>'")
        digest = token_digest(token)
        found: str | None = None
        for entry in self._refresh():
            # Every entry is compared, each in constant time, so the answer's timing says
            # nothing about which entry (or how much of one) matched.
            if hmac.compare_digest(entry.digest, digest):
                found = entry.name
        if found is None:
            raise TokenRejected("unknown bearer token")
        return found
