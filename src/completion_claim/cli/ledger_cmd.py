"""``claim ledger prove`` and ``claim ledger verify``: check a ledger without trusting whoever
keeps it.

URL is either the ledger's database (a SQLite path, ``sqlite:///...`` or ``postgresql://...``,
opened read-only) or the base URL of ``claim serve`` (``http(s)://...`` or ``unix:///...sock``).
Either way every conclusion comes from hashes and signatures this command checks itself: a
database is audited row by row, and a service's answers are checked from its proofs alone.
The service modules are imported inside the commands, so other commands never load them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from .._files import read_limited, write_atomic
from .._json import dumps, loads
from .._optional import require
from ..errors import UsageError
from ..public_key import PublicKey, parse_public_key
from ..service import merkle
from ..service.ledger_errors import LedgerError, LedgerTampered, NotInLedger, NotYetIntegrated
from ..service.records import (
    DERIVED_MEMBERS,
    ConsistencyProof,
    InclusionProof,
    TreeHead,
    is_leaf_document,
)
from ..timefmt import format_time
from . import EXIT_VERIFIED, app

MAX_HEAD_BYTES = 1024 * 1024
_P = TypeVar("_P")
_SERVICE_SCHEMES = ("http://", "https://", "unix:")

LOG_KEY_HELP = (
    "The log's public key ('ed25519:...' or a file holding it). Without it the tree head's own "
    "key is used, which proves the head unchanged but not whose log it is."
)


@app.group("ledger")
def ledger_group() -> None:
    """Prove that an entry is in a claim ledger, and that the ledger was not rewritten.

    \b
    URL is a ledger database (a SQLite file, sqlite:///PATH or postgresql://...), read
    read-only, or a `claim serve` base URL (http(s)://HOST:PORT or unix:///PATH.sock).
    Exit codes: 0 checked, 2 the log contradicts its signed tree heads, 4 usage,
    5 the ledger or the service cannot be reached or read.
    """


@ledger_group.command("prove")
@click.argument("url")
@click.argument("index", type=click.IntRange(min=0))
@click.option("--log-key", "log_key", metavar="KEY", help=LOG_KEY_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the proof and the head as JSON.")
def prove_command(url: str, index: int, log_key: str | None, as_json: bool) -> int:
    """Check that entry INDEX is in the log under its latest signed tree head.

    The entry's leaf hash is recomputed from its document, and its inclusion proof is checked
    against the root the head signs.
    """
    key = _pinned_key(log_key)
    proven = (
        _prove_in_service(url, index, key) if _is_service(url) else _prove_in_db(url, index, key)
    )
    if as_json:
        click.echo(
            dumps(
                {
                    "index": index,
                    "leaf_hash": proven.proof.leaf_hash,
                    "proof": proven.proof.to_json(),
                    "tree_head": proven.head.to_json(),
                    "log_key_pinned": key is not None,
                }
            )
        )
        return EXIT_VERIFIED
    click.echo(
        f"entry {index} is in the log: its inclusion proof checks against the signed tree "
        f"head at size {proven.head.size}"
    )
    click.echo(f"  leaf hash  {proven.proof.leaf_hash}")
    _echo_head(proven.head, key is not None)
    return EXIT_VERIFIED


@ledger_group.command("verify")
@click.argument("url")
@click.option(
    "--since",
    "since_path",
    metavar="HEAD.json",
    help="A tree head kept from earlier (see --save-head): the log must still contain it.",
)
@click.option("--log-key", "log_key", metavar="KEY", help=LOG_KEY_HELP)
@click.option(
    "--save-head",
    "save_path",
    metavar="FILE",
    help="Write the checked tree head to FILE, to pass as --since next time.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify_command(
    url: str, since_path: str | None, log_key: str | None, save_path: str | None, as_json: bool
) -> int:
    """Check that the log is what its signed tree heads say, and still contains --since.

    A database is audited whole: every entry's bytes against its leaf hash, every derived
    column, every stored subtree, every head's signature and root. A service's latest head is
    checked by its signature and, with --since, by a consistency proof checked offline.
    """
    key = _pinned_key(log_key)
    since = _read_head(since_path) if since_path is not None else None
    check = _verify_service if _is_service(url) else _verify_db
    checked = check(url, since, key)
    if save_path is not None:
        write_atomic(save_path, (dumps(checked.head.to_json()) + "\n").encode())
    if as_json:
        click.echo(
            dumps(
                {
                    "size": checked.head.size,
                    "entries_checked": checked.entries_checked,
                    "heads_checked": checked.heads_checked,
                    "since": None if since is None else since.size,
                    "tree_head": checked.head.to_json(),
                    "log_key_pinned": key is not None,
                }
            )
        )
        return EXIT_VERIFIED
    for line in checked.lines:
        click.echo(line)
    _echo_head(checked.head, key is not None or since is not None)
    if save_path is not None:
        click.echo(f"saved the tree head to {save_path}")
    return EXIT_VERIFIED


# --- shared -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Proven:
    proof: InclusionProof
    head: TreeHead


@dataclass(frozen=True)
class _Checked:
    head: TreeHead
    entries_checked: int | None  # None: the service was checked, not every row
    heads_checked: int
    lines: tuple[str, ...]


def _is_service(url: str) -> bool:
    return url.startswith(_SERVICE_SCHEMES)


def _pinned_key(text: str | None) -> PublicKey | None:
    if text is None:
        return None
    from ..trust.keys import read_public_key  # noqa: PLC0415

    try:
        return read_public_key(text)
    except UsageError as error:
        raise UsageError(str(error).replace("--public-key", "--log-key", 1)) from None


def _pin(key: PublicKey | None, since: TreeHead | None) -> PublicKey | None:
    """Without --log-key, a kept head pins the key its log was signed by."""
    if key is not None or since is None:
        return key
    return parse_public_key(since.log_key, "log_key")


def _read_head(path: str) -> TreeHead:
    from ..service.tree_head import tree_head_from_json  # noqa: PLC0415

    document = loads(read_limited(path, MAX_HEAD_BYTES).decode("utf-8", "replace"))
    return tree_head_from_json(document, f"--since {path}")


def _echo_head(head: TreeHead, pinned: bool) -> None:
    signed = format_time(head.timestamp)
    click.echo(f"  tree head  size {head.size}, root {head.root_hash}, signed {signed}")
    note = "pinned" if pinned else "not pinned: the head's own key; pass --log-key to pin it"
    click.echo(f"  log key    {head.log_key} ({note})")


def _checked_head(head: TreeHead, key: PublicKey | None, where: str) -> None:
    """A head whose signature does not hold is the log contradicting itself (exit 2)."""
    from ..service.tree_head import TreeHeadError, check_tree_head  # noqa: PLC0415

    try:
        check_tree_head(head, key)
    except TreeHeadError as error:
        raise LedgerTampered(f"{where}: {error}") from None


def _service_modules() -> None:
    """Fail with a line naming the extra when the ledger's database library is missing."""
    require("sqlalchemy", extra="serve", for_what="claim ledger on a database")


# --- a ledger database --------------------------------------------------------------------


def _prove_in_db(url: str, index: int, key: PublicKey | None) -> _Proven:
    _service_modules()
    from ..service.ledger import Ledger  # noqa: PLC0415
    from ..trust.canonical import canonical_bytes  # noqa: PLC0415

    ledger = Ledger.open(url)
    try:
        head = ledger.tree_head()
        _checked_head(head, key, "the latest tree head")
        entry = ledger.get(index) or ledger.get_start(index)  # a claim, or a session's start
        if entry is None:
            raise NotInLedger(f"no entry {index} in the log of size {head.size}")
        if index >= head.size:
            raise NotYetIntegrated(
                f"entry {index} is sequenced but no signed tree head covers it yet (the latest "
                f"has size {head.size}); it is integrated within the service's merge delay: "
                "ask again"
            )
        proof = ledger.inclusion_proof(index, head.size)
    finally:
        ledger.close()
    _check_inclusion(proof, head, canonical_bytes(entry.leaf_document()))
    return _Proven(proof, head)


def _check_inclusion(proof: InclusionProof, head: TreeHead, leaf: bytes) -> None:
    if proof.leaf_hash != merkle.leaf_hash(leaf).hex():
        raise LedgerTampered(
            f"entry {proof.index}: its document does not hash to the leaf the proof is for"
        )
    try:
        merkle.verify_inclusion(proof, head.root_hash)
    except merkle.ProofError as error:
        raise LedgerTampered(str(error)) from None


def _verify_db(url: str, since: TreeHead | None, key: PublicKey | None) -> _Checked:
    _service_modules()
    from ..service.ledger import Ledger  # noqa: PLC0415

    ledger = Ledger.open(url)
    try:
        report = ledger.audit(since=since, log_key=_pin(key, since))
    finally:
        ledger.close()
    lines = [
        f"{report.size} entries and {report.heads} signed tree heads checked: no entry, subtree "
        "or head was edited, removed or reordered"
    ]
    if report.pending:
        lines.append(
            f"  {report.pending} more sequenced, not yet under a signed head: each batch of "
            "them sealed by the log key (integrated within the service's merge delay)"
        )
    if report.since is not None:
        lines.append(f"  the log still contains the kept tree head at size {report.since}")
    return _Checked(report.head, report.size, report.heads, tuple(lines))


# --- a service ----------------------------------------------------------------------------


def _prove_in_service(url: str, index: int, key: PublicKey | None) -> _Proven:
    from ..trust.canonical import canonical_bytes  # noqa: PLC0415

    with _service(url) as ask:
        try:
            entry = ask(f"v1/claims/{index}", None)
        except NotInLedger as missing:
            try:
                entry = ask(f"v1/starts/{index}", None)  # a session's start is an entry too
            except NotInLedger:
                raise missing from None
        answer = ask(f"v1/proof/{index}", None)
    # The leaf hash is recomputed from the document the service shows, never taken from it.
    document = (
        {k: v for k, v in entry.items() if k not in DERIVED_MEMBERS}
        if isinstance(entry, dict)
        else None
    )
    if not is_leaf_document(document):
        raise _unreadable(url, f"GET /v1/claims/{index} did not answer an entry")
    if not isinstance(answer, dict) or set(answer) != {"proof", "tree_head"}:
        raise _unreadable(url, f"GET /v1/proof/{index} did not answer a proof and a tree head")
    head = _served_head(url, answer["tree_head"])
    _checked_head(head, key, "the service's tree head")
    proof = _served(url, merkle.inclusion_proof_from_json, answer["proof"])
    if (proof.index, proof.tree_size) != (index, head.size):
        raise LedgerTampered(
            f"the service's proof is for entry {proof.index} in size {proof.tree_size}, not "
            f"for entry {index} under its tree head of size {head.size}"
        )
    _check_inclusion(proof, head, canonical_bytes(document))
    return _Proven(proof, head)


def _verify_service(url: str, since: TreeHead | None, key: PublicKey | None) -> _Checked:
    pin = _pin(key, since)
    if since is not None:
        _checked_head(since, pin, f"the kept tree head at size {since.size}")
    with _service(url) as ask:
        head = _served_head(url, ask("v1/tree-head", None))
        _checked_head(head, pin, "the service's tree head")
        lines = [f"the service's tree head at size {head.size} is signed by the log's key"]
        if since is None:
            lines.append(
                "  only its signature was checked: keep it with --save-head and pass it as "
                "--since next time to check the log was not rewritten"
            )
            return _Checked(head, None, 1, tuple(lines))
        if since.size > head.size:
            raise LedgerTampered(
                f"the kept tree head covers {since.size} entries but the service's latest "
                f"covers only {head.size}: entries were removed"
            )
        if since.size == 0:
            # Every log extends the empty one: there is nothing to ask (the proof is empty).
            proof = ConsistencyProof(0, head.size, ())
        else:
            params = {"old_size": since.size, "new_size": head.size}
            served = ask("v1/consistency", params)
            proof = _served(url, merkle.consistency_proof_from_json, served)
    if (proof.old_size, proof.new_size) != (since.size, head.size):
        raise LedgerTampered(
            f"the service's consistency proof is from size {proof.old_size} to "
            f"{proof.new_size}, not from {since.size} to {head.size}"
        )
    try:
        merkle.verify_consistency(proof, since.root_hash, head.root_hash)
    except merkle.ProofError as error:
        raise LedgerTampered(f"the log was rewritten since the kept tree head: {error}") from None
    lines.append(
        f"  consistent with the kept tree head at size {since.size}: "
        f"{len(proof.path)} proof hashes checked offline"
    )
    return _Checked(head, None, 2, tuple(lines))


@contextmanager
def _service(url: str) -> Iterator[Callable[[str, dict[str, int] | None], Any]]:
    """``ask(path, params)`` against the service: unreachable or refusing becomes a
    :class:`LedgerError` (exit 5), an entry it does not hold :class:`NotInLedger`."""
    from ..service.client import ServiceClient, ServiceError, ServiceRefused  # noqa: PLC0415

    def ask(path: str, params: dict[str, int] | None) -> Any:
        try:
            return client.get_json(path, params)
        except ServiceRefused as refused:
            if refused.status == 404:
                raise NotInLedger(f"{client.shown}: {refused.error}") from None
            raise LedgerError(str(refused)) from None
        except ServiceError as error:
            raise LedgerError(str(error)) from None

    with ServiceClient(url) as client:
        yield ask


def _served_head(url: str, document: object) -> TreeHead:
    from ..service.tree_head import TreeHeadError, tree_head_from_json  # noqa: PLC0415

    try:
        return tree_head_from_json(document, "the service's tree head")
    except TreeHeadError as error:
        raise _unreadable(url, str(error)) from None


def _served(url: str, parse: Callable[[object], _P], document: object) -> _P:
    try:
        return parse(document)
    except merkle.ProofError as error:
        raise _unreadable(url, str(error)) from None


def _unreadable(url: str, problem: str) -> LedgerError:
    from ..observe.values import redact_url  # noqa: PLC0415

    return LedgerError(f"{redact_url(url)}: the service's answer is unusable: {problem}")
