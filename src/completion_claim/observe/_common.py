"""What every observer shares: the evidence item it writes and how it is recorded."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .. import __version__
from .._json import dumps, loads
from ..claimfile import RawClaim, edit_claim, next_id, read_claim
from ..errors import ObservationFailed, UsageError
from ..model import ABSENT, BUILTIN_COVERED_BY, INDEPENDENT, SELF_ATTESTED, Claim
from ..timefmt import format_time

if TYPE_CHECKING:
    from ..trust.keys import SigningKey

DEFAULT_VERIFIER_ID = f"claim-observer/{__version__}"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ObserverSettings:
    """The options every ``claim observe`` command takes."""

    claim_path: str
    covers: tuple[str, ...] | None  # None: every mutation in the claim when observed
    verifier_id: str
    self_attested: bool
    print_only: bool
    record_failure: bool
    evidence_id: str | None
    sign_key_path: str | None = None  # signs each item's attestation (DSSE); read after observing
    as_json: bool = False  # the command prints one JSON object; --print then prints nothing more


@dataclass(frozen=True)
class Observation:
    """What an observer saw. ``observed_value`` is ABSENT only for a failed attempt."""

    target: str
    expected: Any
    observed_value: Any
    subject: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def observer_options(command: F) -> F:
    """Attach the shared options to an observe command (they arrive as keyword arguments)."""
    options = [
        click.option(
            "--covers",
            metavar="IDS",
            help="Comma-separated mutation ids this observes; '' for task-level. "
            "Default: every mutation of a kind this check type may cover "
            "(test_run: file_write, endpoint_health: deploy, state_readback: state_write or "
            "ui_action, dom_assertion: ui_action).",
        ),
        click.option(
            "--verifier-id",
            default=DEFAULT_VERIFIER_ID,
            show_default=True,
            help="Who observes (name/version).",
        ),
        click.option(
            "--self-attested",
            is_flag=True,
            help="Record as the agent's own report (never satisfies a requirement).",
        ),
        click.option(
            "--print",
            "print_only",
            is_flag=True,
            help="Print the evidence item instead of writing it into the claim.",
        ),
        click.option(
            "--record-failure",
            is_flag=True,
            help="When the observation fails, record the attempt (without an "
            "observation) before exiting non-zero.",
        ),
        click.option("--evidence-id", help="Id of the new evidence item (default e1, e2, ...)."),
        click.option(
            "--sign-key",
            metavar="FILE",
            help="Sign the evidence with this observer's private key, so a policy in signed "
            "mode can prove it independent.",
        ),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="Print {path, recorded, evidence, as_expected} as JSON.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def settings_from(claim_path: str, options: dict[str, Any]) -> ObserverSettings:
    covers_text: str | None = options.pop("covers")
    covers = None
    if covers_text is not None:
        covers = tuple(part.strip() for part in covers_text.split(",") if part.strip())
    sign_key_path: str | None = options.pop("sign_key", None)
    if sign_key_path is not None:
        _check_key_path(sign_key_path)
    return ObserverSettings(
        claim_path=claim_path,
        covers=covers,
        verifier_id=options.pop("verifier_id"),
        self_attested=options.pop("self_attested"),
        print_only=options.pop("print_only"),
        record_failure=options.pop("record_failure"),
        evidence_id=options.pop("evidence_id"),
        sign_key_path=sign_key_path,
        as_json=options.pop("as_json", False),
    )


def _check_key_path(path: str) -> None:
    """Only the path is checked before observing: the key itself is read after the observation,
    when no process the observation started is left to see it in memory or on disk."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot read key {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"key {path} is not a regular file")


def _load_key(settings: ObserverSettings) -> SigningKey | None:
    if settings.sign_key_path is None:
        return None
    # Imported here: only signing needs the crypto library.
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    return load_signing_key(settings.sign_key_path)


def now() -> datetime:
    return datetime.now(UTC)


def run_observer(
    settings: ObserverSettings,
    check_type: str,
    observe: Callable[[], Observation],
    failed_target: str,
    failed_expected: Any,
) -> dict[str, Any]:
    """Observe once and record the evidence; a failed attempt is recorded only on request.

    ``at`` is the moment the observation started, from this process's clock. The claim is read
    (and validated) before observing, so a broken claim is reported before any work is done.
    """
    _, claim = read_claim(settings.claim_path)
    covers = _resolve_covers(settings, claim, check_type)
    started = now()
    try:
        observation = observe()
    except ObservationFailed as failure:
        if settings.record_failure:
            attempt = Observation(
                failed_target, failed_expected, ABSENT, details={"error": str(failure)}
            )
            _record(settings, check_type, covers, started, attempt, _load_key(settings))
        raise
    return _record(settings, check_type, covers, started, observation, _load_key(settings))


def _resolve_covers(settings: ObserverSettings, claim: Claim, check_type: str) -> tuple[str, ...]:
    """By default a check speaks for the mutations the built-in map lets it cover (a readback
    does not speak for code edits); an explicit ``--covers`` is kept, for the verifier to judge
    under the operator's policy."""
    known = [m.id for m in claim.mutations]
    if settings.covers is None:
        return tuple(
            m.id for m in claim.mutations if check_type in BUILTIN_COVERED_BY.get(m.kind, ())
        )
    unknown = [m for m in settings.covers if m not in known]
    if unknown:
        raise UsageError(f"--covers: no mutation {unknown[0]!r} in {settings.claim_path}")
    return settings.covers


def _record(
    settings: ObserverSettings,
    check_type: str,
    covers: tuple[str, ...],
    started: datetime,
    observation: Observation,
    key: SigningKey | None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "check_type": check_type,
        "target": observation.target,
        "at": format_time(started),
        "covers": list(covers),
        "verifier": {
            "id": settings.verifier_id,
            "kind": SELF_ATTESTED if settings.self_attested else INDEPENDENT,
        },
        "expected": observation.expected,
    }
    if observation.observed_value is not ABSENT:
        item["observed_value"] = observation.observed_value
    if observation.subject is not None:
        item["subject"] = observation.subject
    if observation.details:
        item["details"] = observation.details

    def append(raw: RawClaim, claim: Claim) -> None:
        taken = {e.id for e in claim.evidence if e.id is not None}
        evidence_id = settings.evidence_id or next_id("e", taken)
        if evidence_id in taken:
            raise UsageError(f"--evidence-id: {evidence_id!r} is already in the claim")
        item["id"] = evidence_id
        _attest(item, claim, key)
        raw["evidence"].append(item)

    if settings.print_only:
        _, claim = read_claim(settings.claim_path)
        item["id"] = settings.evidence_id or next_id(
            "e", {e.id for e in claim.evidence if e.id is not None}
        )
        _attest(item, claim, key)
        if not settings.as_json:
            click.echo(dumps(item, indent=2))
    else:
        edit_claim(settings.claim_path, append)
    return item


def _attest(item: dict[str, Any], claim: Claim, key: SigningKey | None) -> None:
    """Sign the item as it will be written, bound to the claim's task and to the covered
    mutations' ids and digests as they stand now (the caller holds the claim's lock)."""
    if key is None:
        return
    from ..trust.evidence import sign_evidence  # noqa: PLC0415

    # Sign the JSON the file will hold, not the Python values the observer produced.
    item["attestation"] = sign_evidence(loads(dumps(item)), claim, key)
