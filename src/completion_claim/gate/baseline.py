"""Start records: the base commit and what each readback, endpoint and page showed before the
agent worked, so that a value that already held does not count as the agent's doing.

A start record lives in the runs directory, per repository (``start/repo.json``) or per session
(``start/session-<sha256(id)[:16]>.json``). It is written once: a second start of the same
session is refused (:class:`StartExists`), since a start taken again after the agent worked would
make its work the base; only the operator's explicit ``claim gate --start --restart`` replaces
it. Besides the base commit and the snapshots it holds the trust anchors taken at the start:
each trusted ref's commit, and manifests of the protected files and configuration files copied
into the operator's store. A snapshot is matched to a check by its check type and mutation
target and by the observer's target (the redacted URL and lookup), so a check changed since the
start gets no baseline rather than a wrong one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from .._files import write_atomic
from .._json import dumps, loads
from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ..model import ABSENT
from ..observe._common import Observation
from ..timefmt import format_time
from .config import (
    CheckConfig,
    DomAssertionCheck,
    EndpointHealthCheck,
    GateConfig,
    ProbedCheck,
    StateReadbackCheck,
    dom_arguments,
    readback_arguments,
)

START_FOLDER = "start"
RECORD_VERSION = 1


class StartExists(ClaimError):
    """The session (or repository) has a start record already; a start is taken once."""


def already_started(session: str | None, where: str, advice: str) -> StartExists:
    """The one line naming the session whose start was refused."""
    what = "the repository" if session is None else f"session {session[:200]!r}"
    return StartExists(f"{what} was started already ({where}); a start is taken once: {advice}")


def repository_id(root: Path) -> str:
    """The repository's folder in the runs directory: its name, and a digest of where it is, so
    two clones of one project keep apart."""
    return f"{root.name}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


def session_digest(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()[:16]


def start_record_path(config: GateConfig, root: Path, session: str | None) -> Path:
    name = "repo.json" if session is None else f"session-{session_digest(session)}.json"
    return config.runs_dir / repository_id(root) / START_FOLDER / name


@dataclass(frozen=True)
class Probe:
    target: str  # the observer's (secrets redacted)
    failed_expected: Any  # what a failed attempt records as expected
    observe: Callable[[], Observation]  # observes once, records nothing


def probe(check: ProbedCheck, screenshot_dir: Path | None = None) -> Probe:
    """How the observer sees this check; a page's screenshot goes to ``screenshot_dir`` (none
    for a baseline, which only needs what the page showed)."""
    if isinstance(check, DomAssertionCheck):
        from ..observe.dom import observe_dom  # noqa: PLC0415

        page = dom_arguments(check)
        return Probe(page.target, page.expected(), partial(observe_dom, page, screenshot_dir))
    if isinstance(check, EndpointHealthCheck):
        from ..observe.endpoint import endpoint_check, observe_endpoint  # noqa: PLC0415

        endpoint = endpoint_check(
            check.url, check.method, check.expect_status, dict(check.expect_json),
            dict(check.expect_header), check.timeout_s, False,
        )  # fmt: skip
        return Probe(
            endpoint.target, endpoint.failed_expected(), partial(observe_endpoint, endpoint)
        )
    from ..observe.readback import build_readback, observe_readback  # noqa: PLC0415

    readback = build_readback(*readback_arguments(check))
    return Probe(readback.target, readback.failed_expected(), partial(observe_readback, readback))


def probed(checks: tuple[CheckConfig, ...]) -> list[ProbedCheck]:
    return [
        c
        for c in checks
        if isinstance(c, EndpointHealthCheck | StateReadbackCheck | DomAssertionCheck)
    ]


def take_snapshots(config: GateConfig) -> list[dict[str, Any]]:
    """Observe each readback, endpoint and page once; a failed attempt is kept with its error (the
    store may not hold the record yet: then nothing can have held before)."""
    snapshots = []
    for check in probed(config.checks):
        found = probe(check)
        snapshot: dict[str, Any] = {
            "check_type": check.check_type,
            "target": check.target,
            "observer_target": found.target,
            "at": format_time(datetime.now(UTC)),
        }
        try:
            observation = found.observe()
        except ObservationFailed as failure:
            snapshot["error"] = str(failure)
        else:
            snapshot["observed_value"] = observation.observed_value
        snapshots.append(snapshot)
    return snapshots


def write_start_record(
    path: Path,
    base: str | None,
    snapshots: list[dict[str, Any]],
    anchors: Mapping[str, Any] | None = None,
    *,
    replace: bool = False,
) -> None:
    """Write the record once (``replace``: the operator's explicit restart). Linked into place,
    so of two starts at once exactly one wins and the other gets :class:`StartExists`.
    ``anchors``: the trusted refs resolved, and the manifests of what the operator's store
    copied (``anchors.start_anchors``)."""
    record = {
        "version": RECORD_VERSION,
        "taken_at": format_time(datetime.now(UTC)),
        "base": base,
        "snapshots": snapshots,
        **(anchors or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = (dumps(record, indent=2) + "\n").encode()
    if replace:
        write_atomic(path, data)
        return
    try:
        write_atomic(path, data, exclusive=True)
    except UsageError:
        if path.exists():
            raise StartExists(f"{path} exists: a start record is written once") from None
        raise


def read_start_record(path: Path) -> dict[str, Any] | None:
    """The start record, or None when there is none; an unreadable one is an error (never
    silently a run without baselines)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read the start record {path}: {exc.strerror or exc}") from None
    try:
        record = loads(data.decode("utf-8"))
    except (UnicodeDecodeError, InvalidDocument):
        raise UsageError(f"the start record {path} is not JSON; run claim gate --start") from None
    if (
        type(record) is not dict
        or record.get("version") != RECORD_VERSION
        or type(record.get("snapshots")) is not list
    ):
        raise UsageError(f"the start record {path} is not one this version wrote")
    return record


def baseline_details(
    record: dict[str, Any] | None,
    check: ProbedCheck,
    observer_target: str,
) -> dict[str, Any]:
    """What the gate adds to this check's evidence details about its baseline."""
    if record is None:
        return {"baseline_taken": False}
    for snapshot in record["snapshots"]:
        if type(snapshot) is not dict or (
            snapshot.get("check_type"),
            snapshot.get("target"),
            snapshot.get("observer_target"),
        ) != (check.check_type, check.target, observer_target):
            continue
        details: dict[str, Any] = {"baseline_taken": True, "baseline_at": snapshot.get("at")}
        observed = snapshot.get("observed_value", ABSENT)
        if observed is ABSENT:
            details["baseline_error"] = snapshot.get("error", "no observation")
        else:
            details["baseline"] = observed
        return details
    return {"baseline_taken": False, "baseline_error": "the check changed since the start"}
