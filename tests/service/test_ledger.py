"""The ledger on a real SQLite file and the real PostgreSQL: appends, reads, filters, counts,
signed heads and the proofs a client checks against them."""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from completion_claim.errors import InvalidDocument
from completion_claim.service import merkle
from completion_claim.service.ledger import Ledger, LedgerError, LedgerTampered, NotInLedger
from completion_claim.service.records import EntryFilter, NewStart, StateCounts
from completion_claim.service.tree_head import check_tree_head, tree_head_from_json
from completion_claim.trust.canonical import canonical_bytes
from tests.service.conftest import LOG_KEY, OTHER_KEY, T0, LedgerDb, fresh_entry


def fill(ledger: Ledger, count: int) -> list[str]:
    """Append ``count`` entries cycling through the three states; their leaf hashes."""
    states = ("verified", "refuted", "unverified")
    return [
        ledger.append(
            fresh_entry(
                states[i % 3],  # type: ignore[arg-type]
                agent=f"agent-{i % 2}",
                recorded_at=T0 + timedelta(hours=10 * i),
            )
        ).leaf_hash
        for i in range(count)
    ]


def test_an_empty_log_has_a_signed_head_of_size_zero(ledger: Ledger) -> None:
    head = ledger.tree_head()
    assert (head.size, head.root_hash) == (0, merkle.EMPTY_ROOT.hex())
    assert head.log_key == LOG_KEY.public.text
    check_tree_head(head, LOG_KEY.public)


def test_opening_again_changes_nothing(ledger_url: str) -> None:
    first = Ledger.open(ledger_url, LOG_KEY)
    entry = first.append(fresh_entry())
    first.close()
    again = Ledger.open(ledger_url, LOG_KEY)
    reader = Ledger.open(ledger_url)
    try:
        assert again.get(0) == entry
        assert reader.tree_head() == again.tree_head()
        assert again.tree_head().size == 1
    finally:
        again.close()
        reader.close()


def test_a_database_shared_with_an_application_keeps_both_apart(ledger_db: LedgerDb) -> None:
    """An application with its own ``entries`` table and its own Alembic history at a revision
    the ledger does not know: the ledger migrates beside them and touches neither."""
    ledger_db.execute("CREATE TABLE entries (id INTEGER PRIMARY KEY, body TEXT)")
    ledger_db.execute("INSERT INTO entries (id, body) VALUES (1, 'the application''s')")
    ledger_db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
    ledger_db.execute("INSERT INTO alembic_version (version_num) VALUES ('app_0042')")
    ledger = Ledger.open(ledger_db.url, LOG_KEY)
    try:
        ledger.append(fresh_entry())
        assert ledger.audit(log_key=LOG_KEY.public).size == 1
    finally:
        ledger.close()
    assert ledger_db.execute("SELECT id, body FROM entries") == [(1, "the application's")]
    assert ledger_db.execute("SELECT version_num FROM alembic_version") == [("app_0042",)]


def test_an_appended_entry_reads_back_with_the_hash_of_its_leaf(ledger: Ledger) -> None:
    new = fresh_entry("refuted", agent="ci-runner-7")
    entry = ledger.append(new)
    assert entry.index == 0
    expected = merkle.leaf_hash(canonical_bytes(new.leaf_document())).hex()
    assert entry.leaf_hash == expected
    assert ledger.get(0) == entry
    assert entry.state == "refuted"
    assert entry.submitted_by == "ci-runner-7"
    assert entry.recorded_at == new.recorded_at
    assert ledger.get(1) is None


def test_each_append_signs_a_head_over_every_leaf_so_far(ledger: Ledger) -> None:
    hashes = fill(ledger, 5)
    head = ledger.tree_head()
    check_tree_head(head, LOG_KEY.public)
    assert head.size == 5
    assert head.root_hash == merkle.root([bytes.fromhex(h) for h in hashes]).hex()


def test_the_head_of_every_earlier_size_is_kept(ledger: Ledger) -> None:
    hashes = [bytes.fromhex(h) for h in fill(ledger, 4)]
    for size in range(5):
        head = ledger.tree_head(size)
        check_tree_head(head, LOG_KEY.public)
        assert (head.size, head.root_hash) == (size, merkle.root(hashes[:size]).hex())
    assert ledger.tree_head(4) == ledger.tree_head()
    with pytest.raises(NotInLedger, match="no signed tree head of size 5"):
        ledger.tree_head(5)


def test_inclusion_proofs_verify_against_the_head_for_every_entry_and_size(
    ledger: Ledger,
) -> None:
    hashes = [bytes.fromhex(h) for h in fill(ledger, 11)]
    for size in range(1, 12):
        root = merkle.root(hashes[:size]).hex()
        for index in range(size):
            proof = ledger.inclusion_proof(index, size)
            assert proof.leaf_hash == hashes[index].hex()
            merkle.verify_inclusion(proof, root)
    latest = ledger.inclusion_proof(3)
    assert latest.tree_size == 11
    merkle.verify_inclusion(latest, ledger.tree_head().root_hash)


def test_consistency_proofs_verify_between_every_pair_of_sizes(ledger: Ledger) -> None:
    hashes = [bytes.fromhex(h) for h in fill(ledger, 9)]
    roots = [merkle.root(hashes[:n]).hex() for n in range(10)]
    for new in range(10):
        for old in range(new + 1):
            proof = ledger.consistency_proof(old, new)
            merkle.verify_consistency(proof, roots[old], roots[new])
    assert ledger.consistency_proof(4).new_size == 9


def test_proofs_beyond_the_log_are_refused(ledger: Ledger) -> None:
    fill(ledger, 3)
    with pytest.raises(NotInLedger, match="no entry 3 in the log of size 3"):
        ledger.inclusion_proof(3)
    with pytest.raises(NotInLedger, match="no entry 2 in the log of size 2"):
        ledger.inclusion_proof(2, 2)
    with pytest.raises(NotInLedger, match="no tree of size 4"):
        ledger.inclusion_proof(0, 4)
    with pytest.raises(NotInLedger, match="no tree of size 4 within the log of size 3"):
        ledger.consistency_proof(4)
    with pytest.raises(NotInLedger, match="no tree of size 5"):
        ledger.consistency_proof(1, 5)


def test_pages_are_newest_first_and_filtered(ledger: Ledger) -> None:
    fill(ledger, 7)
    first = ledger.page(EntryFilter(), limit=3)
    assert [e.index for e in first.items] == [6, 5, 4]
    assert first.next_before == 4
    second = ledger.page(EntryFilter(), before=first.next_before, limit=3)
    assert [e.index for e in second.items] == [3, 2, 1]
    last = ledger.page(EntryFilter(), before=second.next_before, limit=3)
    assert [e.index for e in last.items] == [0]
    assert last.next_before is None
    refuted = ledger.page(EntryFilter(state="refuted"))
    assert [e.index for e in refuted.items] == [4, 1]
    by_agent = ledger.page(EntryFilter(agent="agent-1", state="verified"))
    assert [e.index for e in by_agent.items] == [3]
    # Entry i is recorded 10 hours after entry i - 1: since is inclusive, until exclusive.
    window = EntryFilter(since=T0 + timedelta(hours=20), until=T0 + timedelta(hours=50))
    assert [e.index for e in ledger.page(window).items] == [4, 3, 2]
    assert ledger.page(EntryFilter(task="another-task")).items == ()
    assert ledger.page(EntryFilter(policy="completion-claim/builtin")).items[0].index == 6


def test_stats_count_states_days_agents_policies_and_unmet_codes(ledger: Ledger) -> None:
    fill(ledger, 7)
    ledger.append(fresh_entry("refuted", agent="agent-1", outcome="", recorded_at=T0))
    stats = ledger.stats()
    assert stats.total == StateCounts(verified=3, unverified=2, refuted=3)
    assert stats.by_day == (
        (date(2026, 8, 27), StateCounts(verified=1, refuted=1)),  # entry 0 and the last
        (date(2026, 8, 28), StateCounts(refuted=1, unverified=1)),
        (date(2026, 8, 29), StateCounts(verified=1, refuted=1, unverified=1)),
        (date(2026, 8, 30), StateCounts(verified=1)),
    )
    assert stats.by_agent == (
        ("agent-0", StateCounts(verified=2, refuted=1, unverified=1)),
        ("agent-1", StateCounts(verified=1, refuted=2, unverified=1)),
    )
    assert stats.by_policy == (("completion-claim/builtin", StateCounts(3, 2, 3)),)
    assert stats.top_unmet == (
        ("mutation_uncovered", 5),
        ("contradicted", 3),
        ("no_supporting_evidence", 3),
        ("no_evidence", 2),
    )
    # Every entry said it was done but the last, whose outcome is empty.
    assert (stats.said_done, stats.said_done_refuted) == (7, 2)
    assert stats.false_success_rate == pytest.approx(2 / 7)
    narrowed = ledger.stats(EntryFilter(agent="agent-0", until=T0 + timedelta(hours=25)))
    assert narrowed.total == StateCounts(verified=1, unverified=1)
    assert narrowed.top_unmet == (("mutation_uncovered", 1), ("no_evidence", 1))


def test_stats_of_an_empty_log(ledger: Ledger) -> None:
    stats = ledger.stats()
    assert stats.total == StateCounts()
    assert (stats.by_day, stats.by_agent, stats.top_unmet) == ((), (), ())
    assert stats.false_success_rate is None


def test_a_read_only_ledger_refuses_to_append(ledger: Ledger, ledger_url: str) -> None:
    reader = Ledger.open(ledger_url)
    try:
        with pytest.raises(LedgerError, match="opened without its key: read-only"):
            reader.append(fresh_entry())
    finally:
        reader.close()


def test_a_ledger_signed_by_another_key_is_refused(ledger: Ledger, ledger_url: str) -> None:
    with pytest.raises(LedgerError, match=r"is signed by ed25519:.*not by the key given"):
        Ledger.open(ledger_url, OTHER_KEY)


def test_an_entry_without_a_time_zone_is_refused(ledger: Ledger) -> None:
    naive = fresh_entry(recorded_at=datetime(2026, 8, 27, 18, 0))
    with pytest.raises(InvalidDocument, match="recorded_at"):
        ledger.append(naive)
    assert ledger.tree_head().size == 0


def test_a_plain_path_is_a_sqlite_ledger(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    ledger = Ledger.open(str(path), LOG_KEY)
    try:
        ledger.append(fresh_entry())
    finally:
        ledger.close()
    reader = Ledger.open(f"sqlite:///{path}")
    try:
        assert reader.tree_head().size == 1
    finally:
        reader.close()


def test_reading_a_ledger_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(LedgerError, match="no ledger at"):
        Ledger.open(str(path))
    assert not path.exists()


def test_a_reader_changes_nothing_in_a_database_without_a_ledger(ledger_db: LedgerDb) -> None:
    """An existing database (or schema) with no ledger: reading refuses, and creates no table."""
    ledger_db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    with pytest.raises(LedgerError, match=r"holds no ledger, not \w+; a reader changes nothing"):
        Ledger.open(ledger_db.url)
    assert tables(ledger_db) == ["notes"]
    Ledger.open(ledger_db.url, LOG_KEY).close()  # the key holder creates it
    Ledger.open(ledger_db.url).close()
    assert "ledger_entries" in tables(ledger_db)


def tables(ledger_db: LedgerDb) -> list[str]:
    if ledger_db.backend == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    else:
        query = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
    return [name for (name,) in ledger_db.execute(query)]


def test_an_unreachable_postgresql_is_one_line_without_its_password() -> None:
    url = "postgresql://claim:hunter2@127.0.0.1:1/nothing"
    with pytest.raises(LedgerError) as raised:
        Ledger.open(url, LOG_KEY)
    message = str(raised.value)
    assert "hunter2" not in message
    assert "\n" not in message
    assert message.startswith("cannot open ledger postgresql://claim:***@127.0.0.1:1/nothing")


def test_an_unknown_kind_of_url_is_refused() -> None:
    with pytest.raises(LedgerError, match="expected a file path, sqlite:///PATH or postgresql"):
        Ledger.open("mysql://root@127.0.0.1/test", LOG_KEY)


def test_times_are_kept_to_the_microsecond(ledger: Ledger) -> None:
    moment = datetime(2026, 8, 27, 23, 59, 59, 999_999, tzinfo=UTC)
    ledger.append(fresh_entry(recorded_at=moment))
    assert ledger.page(EntryFilter(since=moment)).items[0].recorded_at == moment
    assert ledger.page(EntryFilter(until=moment)).items == ()
    assert ledger.stats().by_day[0][0] == date(2026, 8, 27)


def test_attack_21_a_nul_in_the_task_id_does_not_keep_a_refuted_claim_out_of_the_log(
    ledger: Ledger,
) -> None:
    """A claim's strings may hold U+0000 (JSON allows it), but a PostgreSQL text column cannot:
    the append of a refuted claim whose task id held one failed (503), so the refutation never
    reached the log, the dashboard or the false-success rate. The derived column holds the id
    in a form both databases store; the leaf keeps the document as sent."""
    task = "deploy-4471\0"
    appended = ledger.append(fresh_entry("refuted", task=task))
    got = ledger.get(appended.index)
    assert got is not None
    assert (got.state, got.task_id) == ("refuted", task)
    assert ledger.stats().said_done_refuted == 1
    assert ledger.audit().size == 1


def test_attack_22_a_nul_in_a_filter_is_no_service_error(ledger: Ledger) -> None:
    """Anyone may read the service: ``GET /v1/claims?agent=%00`` (or the dashboard's filters,
    or /v1/stats) reached PostgreSQL with a U+0000 it refuses, and the service answered 503
    "cannot read ledger" with the database's URL, as if the ledger were down."""
    appended = ledger.append(fresh_entry("refuted", task="deploy-4471\0"))
    for flt in (EntryFilter(agent="\0"), EntryFilter(policy="a\0"), EntryFilter(state="\0")):
        assert ledger.page(flt).items == ()
        assert ledger.stats(flt).total.total == 0
    found = ledger.page(EntryFilter(task="deploy-4471\0")).items
    assert [entry.index for entry in found] == [appended.index]


def test_attack_23_a_long_task_id_does_not_keep_a_refuted_claim_out_of_the_log(
    ledger: Ledger,
) -> None:
    """A claim's task id has no length limit, but a PostgreSQL B-tree index row holds at most
    2,704 bytes: the append of a refuted claim whose task id was 3,000 random characters failed
    (503), so the refutation never reached the log. The task column holds a long id as its
    start and its digest, and a filter by the whole id still finds it, and only it."""
    long_id = "".join(f"{i:x}{i * 7919 % 104729:x}" for i in range(1200))[:6000]
    appended = ledger.append(fresh_entry("refuted", task=long_id))
    other = ledger.append(fresh_entry("refuted", task=long_id[:-1] + "!"))
    got = ledger.get(appended.index)
    assert got is not None
    assert (got.state, got.task_id) == ("refuted", long_id)
    assert [e.index for e in ledger.page(EntryFilter(task=long_id)).items] == [appended.index]
    assert ledger.stats(EntryFilter(task=long_id)).said_done_refuted == 1
    assert ledger.audit().size == other.index + 1


def test_a_page_is_cut_by_the_bytes_of_its_entries(ledger: Ledger) -> None:
    """A page of 200 entries of 1 MiB each was 200 MiB, built in memory for any reader who
    asked; a page now stops at a byte budget (at least one entry), and ``next`` goes on."""
    appended = [ledger.append(fresh_entry(outcome="x" * 20_000)).index for _ in range(5)]
    one = len(canonical_bytes(ledger.get(appended[0]).leaf_document()))  # type: ignore[union-attr]
    seen: list[int] = []
    sizes: list[int] = []
    before = None
    while True:
        page = ledger.page(EntryFilter(), before=before, limit=50, max_bytes=2 * one + 1)
        seen += [entry.index for entry in page.items]
        sizes.append(len(page.items))
        if page.next_before is None:
            break
        before = page.next_before
    assert seen == appended[::-1]
    assert sizes == [2, 2, 1]
    alone = ledger.page(EntryFilter(), limit=50, max_bytes=1)
    assert [entry.index for entry in alone.items] == [appended[-1]]
    assert alone.next_before == appended[-1]


# --- the audit ----------------------------------------------------------------------------


def test_the_audit_passes_an_untouched_log(ledger: Ledger) -> None:
    fill(ledger, 7)
    kept = ledger.tree_head()
    fill(ledger, 3)
    report = ledger.audit(since=kept, log_key=LOG_KEY.public)
    assert (report.size, report.heads, report.since) == (10, 11, 7)
    assert report.log_key == LOG_KEY.public.text
    assert report.head == ledger.tree_head()
    assert ledger.audit().size == 10


def test_the_audit_passes_an_empty_log(ledger: Ledger) -> None:
    assert ledger.audit().size == 0


TAMPERINGS = [
    pytest.param(
        [
            "UPDATE ledger_entries"
            " SET leaf = CAST(REPLACE(CAST(leaf AS TEXT), '4471', '4472') AS BLOB)"
            " WHERE entry_index = 2"
        ],
        "entry 2: its bytes do not hash to its leaf hash",
        id="leaf bytes edited",
    ),
    pytest.param(
        ["UPDATE ledger_entries SET state = 'verified' WHERE entry_index = 4"],
        "entry 4: its state column differs from its leaf document",
        id="a derived column edited",
    ),
    pytest.param(
        ["DELETE FROM ledger_unmet WHERE entry_index = 5 AND code = 'no_evidence'"],
        "entry 5: its unmet codes differ from its leaf document",
        id="an unmet code removed",
    ),
    pytest.param(
        ["DELETE FROM ledger_entries WHERE entry_index = 3"],
        "entry 3 is missing: the entries jump from 2 to 4",
        id="an entry deleted",
    ),
    pytest.param(
        ["DELETE FROM ledger_entries WHERE entry_index = 6"],
        "entries end at 6 but a signed head covers 7",
        id="the last entry deleted",
    ),
    pytest.param(
        ["DELETE FROM ledger_heads WHERE size = 0"],
        "the signed tree head at size 0 is missing",
        id="the empty log's head deleted",
    ),
    pytest.param(
        ["DELETE FROM ledger_heads WHERE size = 7"],
        "a subtree hash (level 0, position 6) is stored beyond the 6 entries",
        id="the latest head deleted",
    ),
    pytest.param(
        [
            "INSERT INTO ledger_entries SELECT 7, leaf_hash, leaf, recorded_us, recorded_day,"
            " state, policy_id, task_id, submitted_by, via, said_done FROM ledger_entries"
            " WHERE entry_index = 6"
        ],
        "entry 7: sequenced without the log key's seal",
        id="an entry appended behind the service's back",
    ),
    pytest.param(
        [
            # Entries 0 and 6 are both verified and by agent-0: every column can follow.
            f"UPDATE ledger_entries SET {column} ="
            f" (SELECT {column} FROM ledger_entries WHERE entry_index = 6)"
            " WHERE entry_index = 0"
            for column in ("leaf", "leaf_hash", "recorded_us", "recorded_day")
        ],
        "tree head at size 1: root differs from the entries (edited, removed or reordered)",
        id="an entry replaced by another, every column agreeing",
    ),
    pytest.param(
        [
            "UPDATE ledger_nodes"
            " SET hash = (SELECT hash FROM ledger_nodes WHERE level = 0 AND position = 0)"
            " WHERE level = 1 AND position = 1"
        ],
        "the stored hash of subtree (level 1, position 1) differs from the entries",
        id="a subtree node edited",
    ),
    pytest.param(
        ["DELETE FROM ledger_nodes WHERE level = 1 AND position = 2"],
        "the stored hash of subtree (level 1, position 2) is missing",
        id="a subtree node deleted",
    ),
    pytest.param(
        [
            "INSERT INTO ledger_nodes (level, position, hash) SELECT 3, 0, hash FROM ledger_nodes"
            " WHERE level = 0 AND position = 0"
        ],
        "a subtree hash (level 3, position 0) is stored beyond the 7 entries",
        id="a subtree node added",
    ),
    pytest.param(
        [
            "UPDATE ledger_heads SET envelope = (SELECT envelope FROM ledger_heads WHERE size = 3)"
            " WHERE size = 4"
        ],
        "tree head at size 4: it is filed under the wrong size",
        id="a head copied over another",
    ),
]


def in_dialect(statement: str, backend: str) -> str:
    """PostgreSQL spells the text round trip of a blob differently."""
    if backend != "postgresql":
        return statement
    return statement.replace(
        "CAST(REPLACE(CAST(leaf AS TEXT), '4471', '4472') AS BLOB)",
        "CONVERT_TO(REPLACE(CONVERT_FROM(leaf, 'UTF8'), '4471', '4472'), 'UTF8')",
    )


@pytest.mark.parametrize(("statements", "problem"), TAMPERINGS)
def test_attack_16_the_audit_names_what_was_tampered_with(
    ledger: Ledger, ledger_db: LedgerDb, statements: list[str], problem: str
) -> None:
    fill(ledger, 7)
    for statement in statements:
        ledger_db.execute(in_dialect(statement, ledger_db.backend))
    with pytest.raises(LedgerTampered) as raised:
        ledger.audit()
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_kept_head_the_log_no_longer_contains_is_found(ledger: Ledger, tmp_path: Path) -> None:
    """A head kept from another history (the log rewritten under the same key) and a head
    larger than the log (entries cut off the end, with their heads) are both refused."""
    other = Ledger.open(str(tmp_path / "other.db"), LOG_KEY, clock=lambda: T0)
    try:
        other.append(fresh_entry(agent="someone else"))
        other.append(fresh_entry())
        rewritten = other.tree_head()
        fill(other, 10)
        longer = other.tree_head()
    finally:
        other.close()
    fill(ledger, 5)
    with pytest.raises(LedgerTampered, match="kept tree head at size 2: the log's root at"):
        ledger.audit(since=rewritten)
    with pytest.raises(LedgerTampered, match="kept tree head at size 12 covers more than"):
        ledger.audit(since=longer)


def test_a_kept_head_with_a_bad_signature_is_refused(ledger: Ledger) -> None:
    fill(ledger, 2)
    kept = ledger.tree_head()
    forged = replace(kept, root_hash=merkle.EMPTY_ROOT.hex())
    with pytest.raises(LedgerTampered, match=r"kept tree head at size 2: .*signed payload"):
        ledger.audit(since=forged)


def test_a_log_signed_by_another_key_fails_a_pinned_audit(ledger: Ledger) -> None:
    fill(ledger, 2)
    with pytest.raises(LedgerTampered, match="not the pinned"):
        ledger.audit(log_key=OTHER_KEY.public)


# --- many writers -------------------------------------------------------------------------

WRITERS = 6
APPENDS_EACH = 40


def append_from_a_process(url: str, writer: int, start: Any) -> None:
    """One writer process: waits for the others, then appends its entries one by one."""
    start.wait(timeout=60)
    ledger = Ledger.open(url, LOG_KEY)
    try:
        for i in range(APPENDS_EACH):
            ledger.append(fresh_entry(agent=f"writer-{writer}", task=f"task-{writer}-{i}"))
    finally:
        ledger.close()


def test_concurrent_appends_from_many_processes_lose_nothing(ledger_db: LedgerDb) -> None:
    """The writers also create the ledger together: its tables, migrations and first head."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [
        context.Process(target=append_from_a_process, args=(ledger_db.url, w, start))
        for w in range(WRITERS)
    ]
    for process in writers:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=300)
    assert [process.exitcode for process in writers] == [0] * WRITERS

    ledger = Ledger.open(ledger_db.url)
    try:
        check_every_append_landed_once(ledger, ledger_db)
    finally:
        ledger.close()


def check_every_append_landed_once(ledger: Ledger, ledger_db: LedgerDb) -> None:
    total = WRITERS * APPENDS_EACH
    seen: list[tuple[int, str, str]] = []
    before = None
    while True:
        page = ledger.page(EntryFilter(), before=before, limit=100)
        seen += [(e.index, e.submitted_by, e.task_id) for e in page.items]
        if page.next_before is None:
            break
        before = page.next_before
    assert sorted(index for index, _, _ in seen) == list(range(total))
    submitted = {
        (f"writer-{w}", f"task-{w}-{i}") for w in range(WRITERS) for i in range(APPENDS_EACH)
    }
    assert sorted((agent, task) for _, agent, task in seen) == sorted(submitted)

    report = ledger.audit(log_key=LOG_KEY.public)
    assert (report.size, report.heads) == (total, total + 1)
    latest = ledger.tree_head()
    heads = [
        tree_head_from_json(json.loads(envelope))
        for (envelope,) in ledger_db.execute("SELECT envelope FROM ledger_heads ORDER BY size")
    ]
    assert [head.size for head in heads] == list(range(total + 1))
    for head in heads:
        check_tree_head(head, LOG_KEY.public)
        proof = ledger.consistency_proof(head.size, latest.size)
        merkle.verify_consistency(proof, head.root_hash, latest.root_hash)


# --- session starts ---------------------------------------------------------------------------


def a_start(session: str | None = "s1", base: str | None = "ab" * 20, at: int = 0) -> NewStart:
    return NewStart(
        repo="/srv/observed/repo",
        session=session,
        base=base,
        taken_at=f"2026-08-27T18:0{at}:00Z",
        submitted_by="orchestrator",
        recorded_at=T0 + timedelta(minutes=at),
    )


def test_a_start_is_an_entry_of_the_log_but_not_a_claim(ledger: Ledger) -> None:
    claim = ledger.append(fresh_entry("refuted"))
    start = ledger.append_start(a_start())
    ledger.append_start(a_start(session=None, base=None, at=1))
    gated = ledger.append(replace(fresh_entry(via="gate"), start_index=start.index))
    assert (start.index, start.session, start.submitted_by) == (1, "s1", "orchestrator")
    assert start.leaf_hash == merkle.leaf_hash(canonical_bytes(start.leaf_document())).hex()
    assert start.leaf_document()["via"] == "start"
    assert ledger.get_start(1) == start
    assert ledger.get(1) is None
    assert ledger.get_start(claim.index) is None
    assert ledger.find_start("/srv/observed/repo", "s1") == start
    assert ledger.find_start("/srv/observed/repo", None) == ledger.get_start(2)
    assert ledger.find_start("/srv/observed/repo", "s2") is None
    assert ledger.find_start("/srv/observed/other", "s1") is None
    assert ledger.get(3) == gated
    assert gated.leaf_document()["start_index"] == 1
    assert "start_index" not in claim.leaf_document()
    # The claim listings and counts hold claims alone.
    assert [e.index for e in ledger.page(EntryFilter()).items] == [3, 0]
    assert ledger.stats().total == StateCounts(verified=1, refuted=1)
    assert [agent for agent, _ in ledger.stats().by_agent] == ["ci-runner-1"]
    # Proven in the log like any entry, and the audit rereads it.
    proof = ledger.inclusion_proof(1)
    assert proof.leaf_hash == start.leaf_hash
    merkle.verify_inclusion(proof, ledger.tree_head().root_hash)
    assert ledger.audit().size == 4
    later = ledger.append_start(a_start(at=2))  # a restart (locally, the operator's --restart)
    assert ledger.find_start("/srv/observed/repo", "s1") == later


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("UPDATE ledger_entries SET via = 'gate' WHERE entry_index = 1", "via column differs"),
        ("UPDATE ledger_entries SET task_id = 'x' WHERE entry_index = 1", "task_id column differs"),
        ("UPDATE ledger_entries SET state = 'verified' WHERE entry_index = 1", "state column"),
    ],
)
def test_the_audit_checks_a_starts_columns_against_its_leaf(
    ledger: Ledger, ledger_db: LedgerDb, statement: str, problem: str
) -> None:
    ledger.append(fresh_entry())
    ledger.append_start(a_start())
    ledger_db.execute(statement)
    with pytest.raises(LedgerTampered, match=f"entry 1: its {problem}"):
        ledger.audit()
