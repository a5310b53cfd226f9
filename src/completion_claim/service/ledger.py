"""The ledger: an append-only RFC 6962 log of decided claims, in SQLite or PostgreSQL.

Writing has two steps, as a Certificate Transparency log's sequencer has. *Sequencing* gives an
entry its index and makes it durable: concurrent appends of one process are queued and the
first in the queue commits them all in one transaction (one fsync, many entries; group commit).
*Integration* adds the sequenced entries to the Merkle tree: the subtree nodes they complete and
one tree head, signed by the log's key, covering them all. With a merge delay of 0 both happen
in the one transaction; with a delay, an integrator thread integrates whatever is sequenced, at
once after each sequencing and at least every half delay, so every entry is under a signed head
well within the delay (docs/ledger.md). Both steps are serialised across processes and machines
(PostgreSQL: a transaction-scoped advisory lock; SQLite: ``BEGIN IMMEDIATE`` with a busy
timeout), so each index is taken once and a head covers exactly the entries before it. Readers
never lock: SQLite runs in WAL mode, and PostgreSQL reads use a repeatable-read snapshot.

``audit`` rereads everything and trusts nothing derived: the leaf bytes are the record, and every
other column, node and head must agree with them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import (
    Connection,
    Engine,
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    text,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from .._optional import needs_extra
from ..errors import InvalidDocument
from ..observe.values import redact_url, scrub, sha256_digest, url_secrets
from ..public_key import PublicKey, parse_public_key
from ..timefmt import parse_time
from ..trust import dsse
from ..trust.canonical import canonical_bytes
from ..trust.keys import SigningKey
from . import merkle
from .ledger_errors import LedgerError, LedgerTampered, NotInLedger
from .records import (
    DECIDED_BY,
    START_VIA,
    STATES,
    ConsistencyProof,
    Entry,
    EntryFilter,
    InclusionProof,
    NewEntry,
    NewStart,
    Page,
    Start,
    StateCounts,
    Stats,
    TreeHead,
    is_leaf_document,
    start_key,
)
from .tables import VERSION_TABLE, batches, entries, entry_unmet, nodes, tree_heads
from .tree_head import TreeHeadError, check_tree_head, sign_tree_head, tree_head_from_json

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_BATCH_SEAL_TYPE = "application/vnd.completion-claim.ledger-batch+binary"
_MAX_BATCH = 512  # entries one sequencing transaction takes at most: bounds its rows in memory
_log = logging.getLogger("completion_claim.service.ledger")
SQLITE_BUSY_TIMEOUT_S = 60.0
"""How long a SQLite writer waits for another's transaction before giving up."""
POSTGRES_CONNECT_TIMEOUT_S = 10
_APPEND_LOCK = 0x6C6F672D636C6D  # an arbitrary constant naming "the ledger's append" lock
_WRITE = "completion_claim_write"
_AUDIT_BATCH = 2000
_US = 1_000_000
# A task id longer than this is indexed as its first _TASK_KEPT_CHARS and its SHA-256: at 4 bytes
# a character, well inside PostgreSQL's 2,704-byte B-tree row.
_TASK_COLUMN_CHARS = 256
# The leaf bytes one page of entries holds at most: a page of 200 entries of 1 MiB each was
# 200 MiB built in memory for any reader who asked.
PAGE_BYTES = 8 * 1024 * 1024
_TASK_KEPT_CHARS = 128


_EVERYTHING = EntryFilter()

__all__ = ["AuditReport", "Ledger", "LedgerError", "LedgerTampered", "NotInLedger"]


@dataclass(frozen=True)
class AuditReport:
    size: int  # entries checked
    heads: int  # signed tree heads checked
    log_key: str  # the key every head is signed by
    head: TreeHead  # the latest
    since: int | None  # the size of the kept head found consistent, if one was given
    pending: int = 0  # entries sequenced after the latest head: not integrated yet


@dataclass
class _Queued:
    """One append waiting for the sequencing transaction that gives it its index."""

    leaf: bytes
    leaf_hash: bytes
    derived: _Derived
    index: int | None = None
    error: BaseException | None = None


def _now() -> datetime:
    return datetime.now(UTC)


def _migrations() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _newest(config: Config) -> str | None:
    return ScriptDirectory.from_config(config).get_current_head()


def _revision(conn: Connection) -> str | None:
    """The schema revision the database's ledger tables are at; None when it has none."""
    return MigrationContext.configure(
        conn, opts={"version_table": VERSION_TABLE}
    ).get_current_revision()


class Ledger:
    """One open ledger database; safe to share between threads (each call takes a connection)."""

    def __init__(
        self,
        engine: Engine,
        key: SigningKey | None,
        clock: Callable[[], datetime],
        shown: str,
        secrets: list[str],
        merge_delay: float = 0.0,
    ) -> None:
        self._engine = engine
        self._key = key
        self._clock = clock
        self._shown = shown
        self._secrets = secrets
        self._postgres = engine.dialect.name == "postgresql"
        self._write_lock = threading.Lock()
        self.merge_delay = merge_delay
        # The sequencing queue: ``_sequencing`` is true while one of the appending threads
        # commits a batch; the others wait on ``_queue_changed`` for their index, or to lead.
        self._queue: list[_Queued] = []
        self._sequencing = False
        self._queue_changed = threading.Condition()
        self._integrate_now = threading.Event()
        self._closing = threading.Event()
        self._integrator: threading.Thread | None = None

    @classmethod
    def open(
        cls,
        url: str,
        key: SigningKey | None = None,
        *,
        clock: Callable[[], datetime] = _now,
        merge_delay: float = 0.0,
    ) -> Ledger:
        """Open the ledger at ``url``. With a key: create it, or migrate it to the newest schema,
        and integrate what an earlier process sequenced and left. Without one it is read-only
        and writes nothing, not even a migration: a database that holds no ledger, or one of
        another schema, is refused; ``append`` refuses.

        ``merge_delay`` (seconds): 0 integrates every batch in its sequencing transaction, so
        an append returns with its entry under a signed head; more than 0 starts an integrator
        thread and an append returns once its entry is sequenced (``close`` stops the thread)."""
        if merge_delay < 0:
            raise LedgerError(f"ledger merge delay {merge_delay}: must not be negative")
        engine, shown = _engine(url, create=key is not None)
        ledger = cls(engine, key, clock, shown, url_secrets(url), merge_delay)
        try:
            with ledger._storage("open"):
                if key is None:
                    ledger._require_newest_schema()
                else:
                    ledger._migrate()
                    ledger._start(key)
        except BaseException:
            engine.dispose()
            raise
        if key is not None and merge_delay > 0:
            ledger._integrator = threading.Thread(
                target=ledger._integrating, name="ledger-integrator", daemon=True
            )
            ledger._integrator.start()
        return ledger

    def close(self) -> None:
        """Stop the integrator (after one last pass, so a clean stop leaves nothing pending)."""
        if self._integrator is not None:
            self._closing.set()
            self._integrate_now.set()
            self._integrator.join()
            self._integrator = None
        self._engine.dispose()

    @property
    def log_key(self) -> PublicKey | None:
        """The key this process signs heads with, which every head must carry; None when the
        ledger was opened read-only."""
        return None if self._key is None else self._key.public

    # --- writing --------------------------------------------------------------------------

    def append(self, entry: NewEntry) -> Entry:
        index, leaf_hash = self._append(entry.leaf_document(), _derived(entry))
        return Entry(**_fields(entry), index=index, leaf_hash=leaf_hash)

    def append_start(self, start: NewStart) -> Start:
        """Log a session's start (not a claim: listings and counts leave it out)."""
        index, leaf_hash = self._append(start.leaf_document(), _derived_start(start))
        return Start(**_start_fields(start), index=index, leaf_hash=leaf_hash)

    def _append(self, document: dict[str, Any], derived: _Derived) -> tuple[int, str]:
        if self._key is None:
            raise LedgerError(f"ledger {self._shown} was opened without its key: read-only")
        leaf = canonical_bytes(document)
        queued = _Queued(leaf, merkle.leaf_hash(leaf), derived)
        self._sequence(queued, self._key)
        if queued.error is not None:
            raise queued.error
        assert queued.index is not None  # set with error None: the batch was committed
        return queued.index, queued.leaf_hash.hex()

    def _sequence(self, queued: _Queued, key: SigningKey) -> None:
        """Queue ``queued`` and return once it has its index (or its batch failed). The thread
        that finds nobody committing leads: it takes the whole queue, itself included, into one
        transaction; meanwhile the queue fills for the next leader. One commit (one fsync) thus
        serves every append that arrived while the last one was being written."""
        with self._queue_changed:
            self._queue.append(queued)
            while self._sequencing:
                self._queue_changed.wait()
                if queued.index is not None or queued.error is not None:
                    return
            self._sequencing = True
            batch = self._queue[:_MAX_BATCH]
            del self._queue[:_MAX_BATCH]
        try:
            with self._storage("append to"), self._writing() as conn:
                first = _sequenced_size(conn)
                self._insert_entries(conn, first, batch)
                hashes = [member.leaf_hash for member in batch]
                seal = key.private.sign(batch_seal_message(first, hashes))
                conn.execute(
                    insert(batches), {"first_index": first, "size": len(batch), "seal": seal}
                )
                if self.merge_delay == 0:
                    self._integrate(conn)
            for offset, member in enumerate(batch):
                member.index = first + offset
        except BaseException as error:  # every append of the batch fails with it, none is lost
            for member in batch:
                member.error = error
        finally:
            with self._queue_changed:
                self._sequencing = False
                self._queue_changed.notify_all()
        if self.merge_delay > 0:
            self._integrate_now.set()

    @staticmethod
    def _insert_entries(conn: Connection, first: int, batch: Sequence[_Queued]) -> None:
        conn.execute(
            insert(entries),
            [
                {
                    "entry_index": first + offset,
                    "leaf_hash": member.leaf_hash,
                    "leaf": member.leaf,
                    **member.derived.columns,
                }
                for offset, member in enumerate(batch)
            ],
        )
        unmet = [
            {"entry_index": first + offset, "code": code}
            for offset, member in enumerate(batch)
            for code in member.derived.unmet
        ]
        if unmet:
            conn.execute(insert(entry_unmet), unmet)

    def integrate(self) -> TreeHead | None:
        """Integrate every sequenced entry no signed head covers yet: the subtree nodes they
        complete and one new head over them all. None when nothing was waiting."""
        with self._storage("integrate"), self._writing() as conn:
            return self._integrate(conn)

    def _integrate(self, conn: Connection) -> TreeHead | None:
        if self._key is None:
            raise LedgerError(f"ledger {self._shown} was opened without its key: read-only")
        size = _integrated_size(conn)
        end = _sequenced_size(conn)
        if end <= size:
            return None
        fresh = conn.execute(
            select(entries.c.entry_index, entries.c.leaf_hash)
            .where(entries.c.entry_index >= size)
            .order_by(entries.c.entry_index)
        ).all()
        for expected, (index, _) in enumerate(fresh, start=size):
            if index != expected:
                raise LedgerTampered(f"entry {expected} is missing: it cannot be integrated")
        _check_seals(conn, size, [bytes(row.leaf_hash) for row in fresh], self._key.public)
        known = _read_nodes(conn, merkle.blocks(0, size) if size else [])
        added: dict[tuple[int, int], bytes] = {}
        for index, stored in fresh:
            # The leaf and every complete subtree it closes, up the right edge of the tree.
            level, position, carried = 0, index, bytes(stored)
            added[(0, index)] = known[(0, index)] = carried
            while position & 1:
                carried = merkle.node_hash(known[(level, position - 1)], carried)
                level, position = level + 1, position >> 1
                added[(level, position)] = known[(level, position)] = carried
        root = merkle.fold([known[block] for block in merkle.blocks(0, end)])
        head = sign_tree_head(self._key, end, root.hex(), self._clock())
        conn.execute(
            insert(nodes),
            [{"level": lv, "position": pos, "hash": h} for (lv, pos), h in added.items()],
        )
        _insert_head(conn, head)
        # Their seals served their purpose: the signed head now vouches for these entries.
        conn.execute(delete(batches).where(batches.c.first_index < end))
        return head

    def _integrating(self) -> None:
        """The integrator thread. A pass runs soon after a sequencing of this process, but no
        sooner than a tenth of the delay after the last pass, so under load each pass (one
        signature, one commit) takes everything sequenced meanwhile; and at least every half
        delay, which picks up what other processes sequenced, or left when they were killed."""
        pause = self.merge_delay / 10
        while True:
            self._integrate_now.wait(self.merge_delay / 2)
            self._closing.wait(pause)  # cut short by ``close``, which wants its last pass now
            self._integrate_now.clear()
            try:
                self.integrate()
            except (LedgerError, LedgerTampered) as error:
                # Kept trying: entries stay durable, and their proofs answer "not integrated
                # yet" until a pass succeeds.
                _log.error("ledger: integration failed: %s", error)
            if self._closing.is_set():
                return

    def sizes(self) -> tuple[int, int]:
        """(integrated, sequenced): entries under the latest signed head, and entries held."""
        with self._storage("read"), self._reading() as conn:
            return _integrated_size(conn), _sequenced_size(conn)

    # --- reading --------------------------------------------------------------------------

    def get(self, index: int) -> Entry | None:
        """The claim at ``index``; None when there is none (or a start is there)."""
        row = self._row(index, entries.c.via != START_VIA)
        return None if row is None else _entry(row.entry_index, row.leaf_hash, row.leaf)

    def get_start(self, index: int) -> Start | None:
        """The session start at ``index``; None when there is none (or a claim is there)."""
        row = self._row(index, entries.c.via == START_VIA)
        return None if row is None else _start_entry(row.entry_index, row.leaf_hash, row.leaf)

    def find_start(self, repo: str, session: str | None) -> Start | None:
        """The latest start logged for the repository (its real path) and session."""
        with self._storage("read"), self._reading() as conn:
            index = conn.execute(
                select(func.max(entries.c.entry_index)).where(
                    entries.c.via == START_VIA,
                    entries.c.task_id == task_column(start_key(repo, session)),
                )
            ).scalar_one_or_none()
        return None if index is None else self.get_start(int(index))

    def _row(self, index: int, kind: Any) -> Any:
        with self._storage("read"), self._reading() as conn:
            return conn.execute(
                select(entries.c.entry_index, entries.c.leaf_hash, entries.c.leaf).where(
                    entries.c.entry_index == index, kind
                )
            ).one_or_none()

    def page(
        self,
        flt: EntryFilter,
        *,
        before: int | None = None,
        limit: int = 50,
        max_bytes: int = PAGE_BYTES,
    ) -> Page:
        """Newest first, at most ``limit`` entries below index ``before``, and no more than
        ``max_bytes`` of them (at least one entry, however large)."""
        if limit < 1:
            raise InvalidDocument("limit", "must be at least 1")
        sized = select(entries.c.entry_index, func.length(entries.c.leaf)).where(*_conditions(flt))
        if before is not None:
            sized = sized.where(entries.c.entry_index < before)
        sized = sized.order_by(entries.c.entry_index.desc()).limit(limit + 1)
        with self._storage("read"), self._reading() as conn:
            # Sizes first, so the leaves read are only those the page holds.
            found = conn.execute(sized).all()
            chosen: list[int] = []
            total = 0
            for index, size in found[:limit]:
                if chosen and total + size > max_bytes:
                    break
                chosen.append(index)
                total += size
            rows = conn.execute(
                select(entries.c.entry_index, entries.c.leaf_hash, entries.c.leaf)
                .where(entries.c.entry_index.in_(chosen))
                .order_by(entries.c.entry_index.desc())
            ).all()
        items = tuple(_entry(r.entry_index, r.leaf_hash, r.leaf) for r in rows)
        more = len(found) > len(chosen)
        return Page(items, items[-1].index if more and items else None)

    def count(self, flt: EntryFilter = _EVERYTHING) -> int:
        """How many claims ``flt`` matches (starts are no claims)."""
        with self._storage("read"), self._reading() as conn:
            found = conn.execute(select(func.count()).where(*_conditions(flt))).scalar_one()
        return int(found)

    def stats(self, flt: EntryFilter = _EVERYTHING) -> Stats:
        where = _conditions(flt)
        state = entries.c.state
        with self._storage("read"), self._reading() as conn:

            def grouped(column: Any) -> dict[Any, StateCounts]:
                rows = conn.execute(
                    select(column, state, func.count()).where(*where).group_by(column, state)
                ).all()
                found: dict[Any, dict[str, int]] = {}
                for group, st, count in rows:
                    found.setdefault(group, {})[st] = count
                return {group: _counts(by_state) for group, by_state in found.items()}

            total = conn.execute(select(state, func.count()).where(*where).group_by(state)).all()
            by_day = grouped(entries.c.recorded_day)
            by_agent = grouped(entries.c.submitted_by)
            by_policy = grouped(entries.c.policy_id)
            by_via = grouped(entries.c.via)
            named = func.count(entry_unmet.c.entry_index)
            top = conn.execute(
                select(entry_unmet.c.code, named)
                .join(entries, entries.c.entry_index == entry_unmet.c.entry_index)
                .where(*where)
                .group_by(entry_unmet.c.code)
                .order_by(named.desc(), entry_unmet.c.code)
                .limit(10)
            ).all()
            said_done = conn.execute(
                select(state, func.count())
                .where(*where, entries.c.said_done.is_(True))
                .group_by(state)
            ).all()
        said: dict[str, int] = {str(st): int(count) for st, count in said_done}

        def most_first(groups: dict[Any, StateCounts]) -> tuple[tuple[str, StateCounts], ...]:
            return tuple(sorted(groups.items(), key=lambda item: (-item[1].total, item[0])))

        return Stats(
            total=_counts(dict(total)),
            by_day=tuple(sorted((_day(day), counts) for day, counts in by_day.items())),
            by_agent=most_first(by_agent),
            by_policy=most_first(by_policy),
            top_unmet=tuple((code, count) for code, count in top),
            said_done=sum(said.values()),
            said_done_refuted=said.get("refuted", 0),
            by_decided_by=tuple(
                (DECIDED_BY[via], by_via[via]) for via in ("gate", "api") if via in by_via
            ),
        )

    def tree_head(self, size: int | None = None) -> TreeHead:
        """The latest signed tree head, or the one signed when the log had ``size`` entries."""
        with self._storage("read"), self._reading() as conn:
            if size is None:
                head = _latest_head(conn)
            else:
                stored = conn.execute(
                    select(tree_heads.c.envelope).where(tree_heads.c.size == size)
                ).scalar_one_or_none()
                if stored is None:
                    raise NotInLedger(f"no signed tree head of size {size}")
                head = _stored_head(size, stored)
        if head is None:
            raise LedgerError(f"ledger {self._shown} has no signed tree head yet")
        return head

    def inclusion_proof(self, index: int, tree_size: int | None = None) -> InclusionProof:
        """The audit path of entry ``index`` in the tree of ``tree_size`` entries (the latest
        head's size by default)."""
        with self._storage("read"), self._reading() as conn:
            size = self._size_at_most(conn, tree_size)
            if not 0 <= index < size:
                raise NotInLedger(f"no entry {index} in the log of size {size}")
            leaf = _read_nodes(conn, [(0, index)])[(0, index)]
            path = _stored_proof(conn, lambda h: merkle.inclusion_path(index, size, h))
        return InclusionProof(index, size, leaf.hex(), merkle.hex_path(path))

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        with self._storage("read"), self._reading() as conn:
            size = self._size_at_most(conn, new_size)
            if not 0 <= old_size <= size:
                raise NotInLedger(f"no tree of size {old_size} within the log of size {size}")
            path = _stored_proof(conn, lambda h: merkle.consistency_path(old_size, size, h))
        return ConsistencyProof(old_size, size, merkle.hex_path(path))

    def _size_at_most(self, conn: Connection, size: int | None) -> int:
        latest = conn.execute(_LAST_HEAD).scalar_one_or_none()
        if latest is None:
            raise LedgerError(f"ledger {self._shown} has no signed tree head yet")
        if size is None:
            return int(latest)
        if not 0 <= size <= latest:
            raise NotInLedger(f"no tree of size {size}: the log's size is {latest}")
        return size

    # --- auditing -------------------------------------------------------------------------

    def audit(self, since: TreeHead | None = None, log_key: PublicKey | None = None) -> AuditReport:
        """Reread every row and raise :class:`LedgerTampered` at the first thing that does not
        agree with the leaves and the signed heads; ``since`` is a head kept from earlier,
        which the log must still contain."""
        with self._storage("audit"), self._reading() as conn:
            return _Audit(conn, log_key).run(since)

    # --- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _storage(self, doing: str) -> Iterator[None]:
        """Turn the database's failures into one line naming the ledger, its secrets hidden."""
        try:
            yield
        except SQLAlchemyError as error:
            reason = getattr(error, "orig", None) or error
            message = scrub(str(reason).split("\n", 1)[0], self._secrets)
            raise LedgerError(f"cannot {doing} ledger {self._shown}: {message}") from None
        except OSError as error:
            reason = scrub(str(error.strerror or error), self._secrets)
            raise LedgerError(f"cannot {doing} ledger {self._shown}: {reason}") from None

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        # Writers of this process queue here first: the database's lock then only arbitrates
        # between processes, and SQLite's busy handler (which sleeps in growing steps) is not
        # what orders the threads of one service.
        with self._write_lock, self._engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                if self._postgres:
                    conn.execute(
                        text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _APPEND_LOCK}
                    )
                yield conn

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._engine.connect() as conn:
            if self._postgres:
                # One snapshot for every statement of the call (a proof and its head agree).
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def _migrate(self) -> None:
        config = _migrations()
        with self._writing() as conn:
            if _revision(conn) == _newest(config):
                return
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def _require_newest_schema(self) -> None:
        newest = _newest(_migrations())
        with self._reading() as conn:
            current = _revision(conn)
        if current != newest:
            found = "holds no ledger" if current is None else f"has ledger schema {current}"
            raise LedgerError(
                f"ledger {self._shown} {found}, not {newest}; a reader changes nothing: "
                "open it once with its key (claim serve) to create or upgrade it"
            )

    def _start(self, key: SigningKey) -> None:
        """Sign the empty log's head, or check that the log's heads are this key's; then
        integrate what a process that stopped (or was killed) sequenced and left."""
        with self._writing() as conn:
            head = _latest_head(conn)
            if head is None:
                empty = sign_tree_head(key, 0, merkle.EMPTY_ROOT.hex(), self._clock())
                _insert_head(conn, empty)
            elif head.log_key != key.public.text:
                raise LedgerError(
                    f"ledger {self._shown} is signed by {head.log_key}, not by the key given"
                )
            self._integrate(conn)


# --- rows -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Derived:
    columns: dict[str, Any]
    unmet: tuple[str, ...]


def _fields(entry: NewEntry) -> dict[str, Any]:
    return {
        "claim": entry.claim,
        "policy": entry.policy,
        "verdict": entry.verdict,
        "submitted_by": entry.submitted_by,
        "via": entry.via,
        "recorded_at": entry.recorded_at,
        "start_index": entry.start_index,
    }


def _start_fields(start: NewStart) -> dict[str, Any]:
    return {
        "repo": start.repo,
        "session": start.session,
        "base": start.base,
        "taken_at": start.taken_at,
        "submitted_by": start.submitted_by,
        "recorded_at": start.recorded_at,
    }


def _derived(entry: NewEntry) -> _Derived:
    """The columns filters and counts read, all taken from the leaf document."""
    probe = Entry(**_fields(entry), index=0, leaf_hash="")
    try:
        state, task, policy = probe.state, probe.task_id, probe.policy_id
        unmet = tuple(sorted(set(probe.unmet_codes)))
        outcome = probe.outcome
    except (KeyError, TypeError, AttributeError) as error:
        raise InvalidDocument("", f"not a decided claim: {error} is missing") from None
    if entry.via not in ("api", "gate"):
        raise InvalidDocument("via", f"not 'api' or 'gate': {str(entry.via)[:40]!r}")
    if state not in STATES:
        raise InvalidDocument("verdict.state", f"not a verdict state: {state[:40]!r}")
    if entry.start_index is not None and (
        type(entry.start_index) is not int or entry.start_index < 0
    ):
        raise InvalidDocument("start_index", "not an entry index")
    return _Derived(
        _columns(entry.recorded_at, state, policy, task_column(task), entry.submitted_by,
                 entry.via, outcome != ""),
        unmet,
    )  # fmt: skip


def _derived_start(start: NewStart) -> _Derived:
    """A start's columns: no verdict or policy (the listings and counts leave starts out), and
    the key it is looked up by where a claim has its task id."""
    texts: tuple[tuple[str, object, bool], ...] = (
        ("repo", start.repo, False), ("taken_at", start.taken_at, False),
        ("session", start.session, True), ("base", start.base, True),
    )  # fmt: skip
    for name, value, nullable in texts:
        if type(value) is not str and not (nullable and value is None):
            raise InvalidDocument(f"start.{name}", "not a string" + (" or null" * nullable))
    return _Derived(
        _columns(start.recorded_at, START_VIA, "", task_column(start.key), start.submitted_by,
                 START_VIA, False),
        (),
    )  # fmt: skip


def _columns(
    recorded_at: datetime, state: str, policy: str, task: str, by: str, via: str, done: bool
) -> dict[str, Any]:
    if recorded_at.tzinfo is None:
        raise InvalidDocument("recorded_at", "the time must carry a UTC offset")
    moment = recorded_at.astimezone(UTC)
    return {
        "recorded_us": _microseconds(moment),
        "recorded_day": moment.date(),
        "state": state,
        "policy_id": policy,
        "task_id": task,
        "submitted_by": by,
        "via": via,
        "said_done": done,
    }


def storable(text: str) -> str:
    """``text`` as a text column of either database holds it: PostgreSQL refuses U+0000, which
    a claim's strings may hold (an append failing on one would keep a refuted claim out of the
    log). The column is only an index: the leaf keeps the string as it was."""
    return text.replace("\0", "\ufffd")


def task_column(task: str) -> str:
    """The task id as its indexed column holds it: a PostgreSQL B-tree index row holds at most
    2,704 bytes and a claim's task id has no limit (an append failing on a long one would keep
    a refuted claim out of the log), so a long id is kept as its start and its digest."""
    if len(task) <= _TASK_COLUMN_CHARS:
        return storable(task)
    digest = sha256_digest(task.encode("utf-8", "surrogatepass"))
    return f"{storable(task[:_TASK_KEPT_CHARS])}\u2026{digest}"


def _microseconds(moment: datetime) -> int:
    delta = moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * _US + delta.microseconds


def _entry(index: int, leaf_hash: bytes, leaf: bytes) -> Entry:
    document = _leaf_document(index, leaf)
    try:
        recorded_at = parse_time(document["recorded_at"], "recorded_at")
    except InvalidDocument as error:
        raise LedgerTampered(f"entry {index}: {error}") from None
    return Entry(
        claim=document["claim"],
        policy=document["policy"],
        verdict=document["verdict"],
        submitted_by=document["submitted_by"],
        via=document["via"],
        recorded_at=recorded_at,
        start_index=document.get("start_index"),
        index=index,
        leaf_hash=bytes(leaf_hash).hex(),
    )


def _start_entry(index: int, leaf_hash: bytes, leaf: bytes) -> Start:
    document = _leaf_document(index, leaf)
    start = document.get("start")
    if document["via"] != START_VIA or type(start) is not dict:
        raise LedgerTampered(f"entry {index}: its bytes are not a start's leaf document")
    try:
        return Start(
            repo=start["repo"],
            session=start["session"],
            base=start["base"],
            taken_at=start["taken_at"],
            submitted_by=document["submitted_by"],
            recorded_at=parse_time(document["recorded_at"], "recorded_at"),
            index=index,
            leaf_hash=bytes(leaf_hash).hex(),
        )
    except (KeyError, InvalidDocument) as error:
        raise LedgerTampered(f"entry {index}: a start without {error}") from None


def _leaf_document(index: int, leaf: bytes) -> dict[str, Any]:
    try:
        document = json.loads(bytes(leaf))
    except ValueError:
        raise LedgerTampered(f"entry {index}: its bytes are not JSON") from None
    if not is_leaf_document(document):
        raise LedgerTampered(f"entry {index}: its bytes are not a leaf document")
    found: dict[str, Any] = document
    return found


def _conditions(flt: EntryFilter) -> list[Any]:
    found: list[Any] = [entries.c.via != START_VIA]  # claims only: a start has no verdict
    for column, value in (
        (entries.c.state, flt.state),
        (entries.c.policy_id, flt.policy),
        (entries.c.submitted_by, flt.agent),
    ):
        if value is not None:
            # Compared as the columns store it: a U+0000 from a reader is no database error.
            found.append(column == storable(value))
    if flt.task is not None:
        found.append(entries.c.task_id == task_column(flt.task))
    if flt.unmet is not None:
        found.append(
            entries.c.entry_index.in_(
                select(entry_unmet.c.entry_index).where(entry_unmet.c.code == storable(flt.unmet))
            )
        )
    if flt.since is not None:
        found.append(entries.c.recorded_us >= _microseconds(_aware(flt.since, "since")))
    if flt.until is not None:
        found.append(entries.c.recorded_us < _microseconds(_aware(flt.until, "until")))
    return found


def _aware(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None:
        raise InvalidDocument(name, "the time must carry a UTC offset")
    return moment


def _counts(by_state: dict[str, int]) -> StateCounts:
    return StateCounts(**{state: by_state.get(state, 0) for state in STATES})


def _day(value: Any) -> date:
    # SQLite hands back what it stored for a Date as a date already; be strict all the same.
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def batch_seal_message(first: int, leaf_hashes: Sequence[bytes]) -> bytes:
    """What a batch's seal signs: its first index, its size and its leaf hashes, under a
    payload type of its own (DSSE's pre-authentication encoding) so that no tree head's or
    evidence's signature can pass for one."""
    body = f"{first}:{len(leaf_hashes)}:".encode() + b"".join(leaf_hashes)
    return dsse.pae(_BATCH_SEAL_TYPE, body)


def _check_seals(
    conn: Connection, size: int, leaf_hashes: Sequence[bytes], log_key: PublicKey
) -> None:
    """Raise :class:`LedgerTampered` unless the entries from ``size`` on (their leaf hashes in
    order) are exactly a run of batches the log key sealed: an entry written into the database
    by anyone without the key is never integrated, so never signed."""
    rows = conn.execute(
        select(batches.c.first_index, batches.c.size, batches.c.seal)
        .where(batches.c.first_index >= size)
        .order_by(batches.c.first_index)
    ).all()
    verifier = Ed25519PublicKey.from_public_bytes(log_key.raw)
    at = size
    for row in rows:
        first, count = int(row.first_index), int(row.size)
        if first != at or count < 1 or first + count > size + len(leaf_hashes):
            break
        message = batch_seal_message(first, leaf_hashes[first - size : first + count - size])
        try:
            verifier.verify(bytes(row.seal), message)
        except InvalidSignature:
            raise LedgerTampered(
                f"entries {first} to {first + count - 1}: their batch's seal does not verify "
                "with the log key (written behind the service's back)"
            ) from None
        at += count
    if at != size + len(leaf_hashes):
        raise LedgerTampered(
            f"entry {at}: sequenced without the log key's seal (written behind the service's "
            "back); it is not integrated"
        )


# Built once: every write asks both, and building them anew each time showed in the profile.
_LAST_INDEX = select(func.max(entries.c.entry_index))
_LAST_HEAD = select(func.max(tree_heads.c.size))


def _sequenced_size(conn: Connection) -> int:
    last = conn.execute(_LAST_INDEX).scalar_one_or_none()
    return 0 if last is None else int(last) + 1


def _integrated_size(conn: Connection) -> int:
    return int(conn.execute(_LAST_HEAD).scalar_one_or_none() or 0)


def _read_nodes(
    conn: Connection, wanted: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], bytes]:
    if not wanted:
        return {}
    # A list of (level = ? AND position = ?) terms: both databases look each one up in the
    # primary key (SQLite scans the whole table for the row-value IN spelling).
    rows = conn.execute(
        select(nodes.c.level, nodes.c.position, nodes.c.hash).where(
            or_(*(and_(nodes.c.level == lv, nodes.c.position == pos) for lv, pos in wanted))
        )
    ).all()
    found = {(row.level, row.position): bytes(row.hash) for row in rows}
    for level, position in wanted:
        if (level, position) not in found:
            raise _node_missing(level, position)
    return found


def _stored_proof(
    conn: Connection, build: Callable[[merkle.SubtreeHash], list[bytes]]
) -> list[bytes]:
    """Build a proof from stored nodes in one read: a first pass only notes which complete
    subtrees it needs (a proof's shape does not depend on the hashes), the second hashes."""
    wanted: set[tuple[int, int]] = set()

    def note(start: int, end: int) -> bytes:
        wanted.update(merkle.blocks(start, end))
        return b""

    build(note)
    stored = _read_nodes(conn, sorted(wanted))
    return build(lambda start, end: merkle.fold([stored[b] for b in merkle.blocks(start, end)]))


def _insert_head(conn: Connection, head: TreeHead) -> None:
    conn.execute(
        insert(tree_heads),
        {
            "size": head.size,
            "root_hash": bytes.fromhex(head.root_hash),
            "envelope": json.dumps(head.to_json(), sort_keys=True),
        },
    )


def _latest_head(conn: Connection) -> TreeHead | None:
    row = conn.execute(
        select(tree_heads.c.size, tree_heads.c.envelope).order_by(tree_heads.c.size.desc()).limit(1)
    ).one_or_none()
    return None if row is None else _stored_head(row.size, row.envelope)


def _stored_head(size: int, stored: str) -> TreeHead:
    try:
        head = tree_head_from_json(json.loads(stored), f"tree head at size {size}")
    except (ValueError, TreeHeadError) as error:
        raise LedgerTampered(f"tree head at size {size}: unreadable ({error})") from None
    if head.size != size:
        raise LedgerTampered(f"tree head at size {size}: it is filed under the wrong size")
    return head


# --- opening ----------------------------------------------------------------------------------


def _engine(url: str, *, create: bool) -> tuple[Engine, str]:
    """An engine for a SQLite path or URL, or a PostgreSQL URL (psycopg 3), and the URL as
    errors may show it."""
    shown = redact_url(url)
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        target = "postgresql+psycopg://" + url.split("://", 1)[1]
        try:
            with needs_extra("serve", "a PostgreSQL ledger"):  # SQLAlchemy imports psycopg here
                engine = create_engine(
                    target,
                    connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S},
                    pool_pre_ping=True,
                )
        except (ArgumentError, ValueError) as error:
            reason = scrub(str(error), url_secrets(url))
            raise LedgerError(f"ledger {shown} is not a usable URL: {reason}") from None
        return engine, shown
    if url.startswith("sqlite:"):
        try:
            path = make_url(url).database or ""
        except ArgumentError:
            raise LedgerError(f"ledger {shown} is not a usable sqlite:/// URL") from None
    elif "://" in url:
        raise LedgerError(
            f"ledger {shown}: expected a file path, sqlite:///PATH or postgresql://..."
        )
    else:
        path = url
    if not path or path == ":memory:":
        raise LedgerError(f"ledger {shown}: a ledger needs a file, not an in-memory database")
    path = os.path.abspath(path)
    if not create and not os.path.isfile(path):
        raise LedgerError(f"no ledger at {path}")
    return _sqlite_engine(path), path


def _sqlite_engine(path: str) -> Engine:
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi: Any, _record: Any) -> None:
        # The driver's own transaction handling is switched off so that ours (below) decides
        # when a transaction begins and how.
        dbapi.isolation_level = None
        cursor = dbapi.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A writer takes the write lock when it begins, not at its first write, so two
        # appenders never both read the same size and then collide.
        immediate = conn.get_execution_options().get(_WRITE)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


# --- the audit --------------------------------------------------------------------------------


class _Audit:
    """One pass over entries, nodes and heads, in batches by key so memory stays bounded by the
    tree's nodes, not by the rows."""

    def __init__(self, conn: Connection, log_key: PublicKey | None) -> None:
        self._conn = conn
        self._key = log_key
        # levels[L][p]: the hash of complete subtree p at level L, recomputed from the leaves.
        self._levels: list[list[bytes]] = [[]]

    def run(self, since: TreeHead | None) -> AuditReport:
        """Heads are signed per integrated batch, so a head may stand at any size; each must
        hold the root of the entries before it, and entries after the latest head are the
        sequenced ones not yet integrated (checked like any other, counted as pending)."""
        unmet = self._unmet()
        heads = self._heads()
        size = 0
        latest = self._check_head(next(heads, None), 0)
        heads_checked = 1
        upcoming = next(heads, None)
        for batch in self._entry_batches():
            for row in batch:
                if row.entry_index != size:
                    if row.entry_index > size:
                        raise LedgerTampered(
                            f"entry {size} is missing: the entries jump from {size - 1} "
                            f"to {row.entry_index}"
                        )
                    raise LedgerTampered(f"entry {row.entry_index} is out of order")
                self._check_entry(row, unmet.pop(size, ()))
                self._add_leaf(bytes(row.leaf_hash))
                size += 1
                if upcoming is not None and upcoming[0] == size:
                    latest = self._check_head(upcoming, size)
                    heads_checked += 1
                    upcoming = next(heads, None)
        if upcoming is not None:
            raise LedgerTampered(
                f"entries end at {size} but a signed head covers {upcoming[0]} "
                "(entries were removed)"
            )
        if unmet:
            stray = min(unmet)
            raise LedgerTampered(f"entry {stray}: unmet codes are stored for an absent entry")
        self._check_nodes(latest.size)
        if size > latest.size:
            assert self._key is not None  # set by the first head's check
            _check_seals(self._conn, latest.size, self._levels[0][latest.size :], self._key)
        kept = None
        if since is not None:
            self._check_since(since, size)
            kept = since.size
        return AuditReport(size, heads_checked, latest.log_key, latest, kept, size - latest.size)

    def _entry_batches(self) -> Iterator[Sequence[Any]]:
        after = -1
        while True:
            batch = self._conn.execute(
                select(entries)
                .where(entries.c.entry_index > after)
                .order_by(entries.c.entry_index)
                .limit(_AUDIT_BATCH)
            ).all()
            if not batch:
                return
            yield batch
            after = batch[-1].entry_index

    def _unmet(self) -> dict[int, tuple[str, ...]]:
        found: dict[int, list[str]] = {}
        for index, code in self._conn.execute(
            select(entry_unmet.c.entry_index, entry_unmet.c.code)
        ):
            found.setdefault(index, []).append(code)
        return {index: tuple(sorted(codes)) for index, codes in found.items()}

    def _heads(self) -> Iterator[tuple[int, bytes, str]]:
        after = -1
        while True:
            batch = self._conn.execute(
                select(tree_heads.c.size, tree_heads.c.root_hash, tree_heads.c.envelope)
                .where(tree_heads.c.size > after)
                .order_by(tree_heads.c.size)
                .limit(_AUDIT_BATCH)
            ).all()
            if not batch:
                return
            for row in batch:
                yield int(row.size), bytes(row.root_hash), str(row.envelope)
            after = batch[-1].size

    def _check_entry(self, row: Any, unmet: tuple[str, ...]) -> None:
        index = row.entry_index
        leaf = bytes(row.leaf)
        if merkle.leaf_hash(leaf) != bytes(row.leaf_hash):
            raise LedgerTampered(f"entry {index}: its bytes do not hash to its leaf hash")
        is_start = _leaf_document(index, leaf)["via"] == START_VIA
        try:
            if is_start:
                derived = _derived_start(_start_entry(index, row.leaf_hash, leaf))
            else:
                derived = _derived(_entry(index, row.leaf_hash, leaf))
        except InvalidDocument as error:
            raise LedgerTampered(f"entry {index}: {error}") from None
        for name, value in derived.columns.items():
            stored = getattr(row, name)
            if name == "recorded_day":
                stored = _day(stored)
            if stored != value:
                raise LedgerTampered(
                    f"entry {index}: its {name} column differs from its leaf document"
                )
        if unmet != derived.unmet:
            raise LedgerTampered(f"entry {index}: its unmet codes differ from its leaf document")

    def _add_leaf(self, leaf_hash: bytes) -> None:
        levels = self._levels
        levels[0].append(leaf_hash)
        level = 0
        while len(levels[level]) % 2 == 0:
            if len(levels) == level + 1:
                levels.append([])
            levels[level + 1].append(merkle.node_hash(levels[level][-2], levels[level][-1]))
            level += 1

    def _root(self, size: int) -> bytes:
        return merkle.fold([self._levels[lv][pos] for lv, pos in merkle.blocks(0, size)])

    def _check_head(self, row: tuple[int, bytes, str] | None, size: int) -> TreeHead:
        if row is None or row[0] != size:
            raise LedgerTampered(f"the signed tree head at size {size} is missing")
        head = _stored_head(size, row[2])
        try:
            if self._key is None:
                # Unpinned: the first head's key must then sign every other head.
                self._key = parse_public_key(head.log_key, "log_key")
            check_tree_head(head, self._key)
        except (TreeHeadError, InvalidDocument) as error:
            raise LedgerTampered(str(error)) from None
        root = self._root(size) if size else merkle.EMPTY_ROOT
        if head.root_hash != root.hex() or row[1] != root:
            raise LedgerTampered(
                f"tree head at size {size}: root differs from the entries "
                "(edited, removed or reordered)"
            )
        return head

    def _check_nodes(self, size: int) -> None:
        """Every stored subtree hash of the integrated entries (the first ``size``) equals the
        one recomputed, none is missing, none extra. Read level by level in position order, so
        each batch is an index range."""
        levels = size.bit_length()
        for level in range(levels):
            known = self._levels[level][: size >> level]
            position = 0
            after = -1
            while True:
                batch = self._conn.execute(
                    select(nodes.c.position, nodes.c.hash)
                    .where(nodes.c.level == level, nodes.c.position > after)
                    .order_by(nodes.c.position)
                    .limit(_AUDIT_BATCH)
                ).all()
                if not batch:
                    break
                for stored_position, stored in batch:
                    if stored_position >= len(known):
                        raise _node_beyond(level, stored_position, size)
                    if stored_position != position:
                        raise _node_missing(level, position)
                    if bytes(stored) != known[position]:
                        raise LedgerTampered(
                            f"the stored hash of subtree (level {level}, position {position}) "
                            "differs from the entries (proofs would fail)"
                        )
                    position += 1
                after = batch[-1].position
            if position != len(known):
                raise _node_missing(level, position)
        higher = self._conn.execute(
            select(nodes.c.level, nodes.c.position).where(nodes.c.level >= levels).limit(1)
        ).first()
        if higher is not None:
            raise _node_beyond(higher.level, higher.position, size)

    def _check_since(self, since: TreeHead, size: int) -> None:
        where = f"the kept tree head at size {since.size}"
        try:
            check_tree_head(since, self._key)
        except TreeHeadError as error:
            raise LedgerTampered(f"{where}: {error}") from None
        if since.size > size:
            raise LedgerTampered(f"{where} covers more than the log's {size} entries")
        root = self._root(since.size) if since.size else merkle.EMPTY_ROOT
        if since.root_hash != root.hex():
            raise LedgerTampered(f"{where}: the log's root at that size differs (rewritten)")


def _node_missing(level: int, position: int) -> LedgerTampered:
    return LedgerTampered(
        f"the stored hash of subtree (level {level}, position {position}) is missing"
    )


def _node_beyond(level: int, position: int, size: int) -> LedgerTampered:
    return LedgerTampered(
        f"a subtree hash (level {level}, position {position}) is stored beyond the {size} entries"
    )
