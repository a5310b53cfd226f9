"""The Completion Claim document (spec 0.1 plus the project's compatible extensions).

One msgspec Struct per JSON object type: its fields drive the strict conversion from decoded
JSON, the verifier's attribute access and the shipped JSON Schema (``_schemagen``). Every type is
immutable. Conversion is strict: wrong types are errors, never coerced, and unknown members are
rejected (a mistyped ``requires`` in a policy must not silently lower the bar).

Two conventions carry meaning, in conversion and in the schema alike:

- ``T | None = None``: an optional member. Absent reads as None; JSON null is invalid.
- ``Any = ABSENT``: a free-form value where null is a value (``expected: null`` asserts a record
  is gone); absent reads as ABSENT.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal, TypeVar, get_args

import msgspec
from msgspec import UNSET, Meta, Struct
from msgspec.structs import force_setattr

from ._json import (
    DEFAULT_MAX_BYTES,
    MAX_DEPTH,
    check_depth,
    cycle_collection_paused,
    decode_document,
)
from .errors import InvalidDocument
from .public_key import PublicKey, parse_public_key
from .signature_bounds import check_signature_bounds
from .timefmt import parse_time, type_name

__all__ = [
    "ABSENT",
    "BUILTIN_COVERED_BY",
    "BUILTIN_POLICY",
    "KNOWN_CHECK_TYPES",
    "Claim",
    "Evidence",
    "Mutation",
    "Policy",
    "PublicKey",
    "Task",
    "Trust",
    "TrustedObserver",
    "VerifierRef",
    "load_claim",
    "load_policy",
    "parse_claim",
    "parse_policy",
]

ABSENT: Final[Any] = UNSET
"""Marks a free-form member the document does not have (distinct from JSON null)."""

SPEC_MAJOR = "0"
INDEPENDENT = "independent"
SELF_ATTESTED = "self_attested"
VerifierKind = Literal["independent", "self_attested"]
DECLARED = "declared"
SIGNED = "signed"
TrustMode = Literal["declared", "signed"]

TEST_RUN = "test_run"
ENDPOINT_HEALTH = "endpoint_health"
STATE_READBACK = "state_readback"
DOM_ASSERTION = "dom_assertion"
CheckTypeName = Literal["dom_assertion", "endpoint_health", "state_readback", "test_run"]
KNOWN_CHECK_TYPES: tuple[str, ...] = get_args(CheckTypeName)
"""The check types this verifier can judge (``checks/`` has one module for each)."""
EXPERIMENTAL_CHECK_TYPES = (DOM_ASSERTION,)
"""Known check types whose evidence a policy with ``experimental_checks: false`` never counts."""
FILE_WRITE = "file_write"
UNCAPTURED = "uncaptured"
"""The kind of a change its producer could not capture (the gate: a work tree it could not read);
no built-in entry maps it, so such a claim is never verified."""
DEPLOY = "deploy"
STATE_WRITE = "state_write"
UI_ACTION = "ui_action"
BUILTIN_COVERED_BY: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        FILE_WRITE: (TEST_RUN,),
        DEPLOY: (ENDPOINT_HEALTH,),
        STATE_WRITE: (STATE_READBACK,),
        UI_ACTION: (DOM_ASSERTION, STATE_READBACK),
    }
)
"""Which check types may cover a mutation of each kind: a check speaks only for the changes it
can observe. ``policy.covered_by`` replaces the entry of each kind it names."""
MAX_AGE_LIMIT_S = 315_576_000
"""Ten years of 365.25 days: the largest ``max_age_s``, so that date arithmetic never overflows."""
MIN_TESTS_LIMIT = 1_000_000_000
"""The largest ``min_tests``: beyond any real run, and within a 32-bit signed integer."""


# --- value types the JSON Schema describes by pattern or range ----------------------------------


class Timestamp(datetime):
    """An RFC 3339 date-time with an explicit offset, read by ``timefmt.parse_time``: digits
    past the microsecond are dropped (never rounded up), ``T`` is required."""

    @classmethod
    def of(cls, moment: datetime) -> Timestamp:
        """The same instant, in the same offset, as a document's time."""
        if type(moment) is cls:
            return moment
        return cls(
            moment.year,
            moment.month,
            moment.day,
            moment.hour,
            moment.minute,
            moment.second,
            moment.microsecond,
            moment.tzinfo,
        )

    SCHEMA: Final = {
        "type": "string",
        "format": "date-time",
        # The pattern demands the offset that "date-time" validators do not all enforce.
        "pattern": (
            r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
            r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
        ),
    }


# The common spelling (upper-case T and Z or a possible offset, a year away from the edges of
# the calendar) is what datetime.fromisoformat reads exactly as parse_time does, digits past the
# microsecond dropped (tests/test_model.py compares the two); every other spelling, and every
# error, goes through parse_time. The offset is spelt out because fromisoformat reads "+05:60"
# as six hours, where RFC 3339 has no such offset.
_PLAIN_TIME = re.compile(
    r"(?!0001|9999)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)


def _timestamp(value: object) -> Timestamp:
    if type(value) is str and _PLAIN_TIME.fullmatch(value) is not None:
        try:
            return Timestamp.fromisoformat(value)
        except ValueError:
            pass  # an impossible date or offset: parse_time names the problem
    try:
        moment = parse_time(value, "")
    except InvalidDocument as error:
        raise ValueError(error.problem) from None
    return Timestamp.of(moment)


class WholeNumber(int):
    """A count: as in JSON Schema, ``5.0`` is the integer 5 (JSON has one number type);
    ``true`` is not a number."""

    MINIMUM: Final = 0
    MAXIMUM: Final = MIN_TESTS_LIMIT
    SCHEMA: Final = {"type": "integer", "minimum": MINIMUM, "maximum": MAXIMUM}


def _whole_number(value: object) -> WholeNumber:
    if type(value) is float and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        shown = f"a fraction ({_short(value)})" if type(value) is float else type_name(value)
        raise TypeError(f"expected an integer, got {shown}")
    if not WholeNumber.MINIMUM <= value <= WholeNumber.MAXIMUM:
        raise ValueError(
            f"must be from {WholeNumber.MINIMUM} to {WholeNumber.MAXIMUM}, got {_short(value)}"
        )
    return WholeNumber(value)


def _public_key(value: object) -> PublicKey:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {type_name(value)}")
    try:
        return parse_public_key(value, "")
    except InvalidDocument as error:
        raise ValueError(error.problem) from None


_CONVERTERS: Final[dict[type, Any]] = {
    Timestamp: _timestamp,
    WholeNumber: _whole_number,
    PublicKey: _public_key,
}


def _dec_hook(kind: type, value: Any) -> Any:
    return _CONVERTERS[kind](value)


def _short(value: object) -> str:
    """A number as an error shows it: a 400-digit integer is not worth printing whole."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}..."


# --- the document ------------------------------------------------------------------------------


def _doc(text: str) -> Meta:
    return Meta(description=text)


Text = Annotated[str, Meta(min_length=1)]
AnyText = str
PositiveSeconds = (
    Annotated[int, Meta(gt=0, le=MAX_AGE_LIMIT_S)]
    | Annotated[float, Meta(gt=0, le=MAX_AGE_LIMIT_S)]
)
_T = TypeVar("_T")
# The one mapping in the format: msgspec's path stops at it ("covered_by[...]"), so an error in
# an entry is located again by checking the entries one by one against this type.
_CheckTypes = Annotated[tuple[CheckTypeName, ...], Meta(min_length=1)]


class _Document(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """Immutable, strict, and untracked by the cycle collector: a document is a tree."""


class Task(_Document, frozen=True):
    """The work the agent was given."""

    id: Annotated[Text, _doc("Stable identifier of the task.")]
    description: Annotated[AnyText | None, _doc("What was asked.")] = None


class Mutation(_Document, frozen=True):
    """One change the agent made to the world."""

    id: Annotated[Text, _doc("Unique within the claim; evidence names it in covers.")]
    kind: Annotated[Text, _doc("What changed: file_write, state_write, deploy, ...")]
    target: Annotated[Text, _doc("What was changed: a path, a record, a service.")]
    at: Annotated[Timestamp, _doc("When the change happened.")]
    digest: Annotated[
        Text | None,
        _doc("Content digest of the target after the change (sha256:..., git-tree:..., deleted)."),
    ] = None


class VerifierRef(_Document, frozen=True):
    """The observer of one evidence item."""

    id: Annotated[Text, _doc("Who made the observation (name/version).")]
    kind: Annotated[
        VerifierKind,
        _doc(
            "independent: observed from outside the agent loop; self_attested: the agent's own "
            "report. In signed mode only the kind its observer signed counts."
        ),
    ]


class Evidence(_Document, frozen=True):
    """One observation about the world."""

    check_type: Annotated[Text, _doc("test_run, endpoint_health, state_readback, ...")]
    target: Annotated[Text, _doc("What was observed.")]
    at: Annotated[Timestamp, _doc("When the observation started.")]
    covers: Annotated[
        tuple[Text, ...], _doc("Ids of the mutations this observes; empty for task-level evidence.")
    ]
    verifier: Annotated[VerifierRef, _doc("Who observed.")]
    expected: Annotated[
        Any, _doc("What the observation must show; absent or empty asserts nothing.")
    ] = ABSENT
    observed_value: Annotated[
        Any, _doc("What was observed; absent when the observation could not be made.")
    ] = ABSENT
    id: Annotated[Text | None, _doc("Unique within the claim.")] = None
    subject: Annotated[Text | None, _doc("Digest of what was observed.")] = None
    details: Annotated[dict[str, Any] | None, _doc("Observer data.")] = None
    attestation: Annotated[
        dict[str, Any] | None, _doc("A DSSE envelope signed by the observer.")
    ] = None

    @property
    def observed(self) -> bool:
        return self.observed_value is not ABSENT


class TrustedObserver(_Document, frozen=True):
    """An observer whose signature proves independence. One grant: evidence whose
    ``verifier.id`` is ``id``, signed with ``public_key``, counts as independent for
    ``check_types``; an observer with several keys has one entry per key."""

    id: Annotated[Text, _doc("The verifier.id its evidence carries.")]
    public_key: Annotated[PublicKey, _doc("ed25519:<base64 of the 32-byte public key>.")]
    check_types: Annotated[
        tuple[Text, ...], Meta(min_length=1), _doc("The check types this key may attest.")
    ]


class Trust(_Document, frozen=True):
    """Who may prove that evidence is independent."""

    mode: Annotated[
        TrustMode,
        _doc(
            "declared: verifier.kind is read as written; signed: only a trusted observer's "
            "signature makes evidence independent."
        ),
    ]
    observers: Annotated[
        tuple[TrustedObserver, ...], _doc("Trusted observers, one entry per key.")
    ] = ()
    agent_keys: Annotated[
        tuple[PublicKey, ...],
        _doc(
            "Keys the agent holds: evidence they sign never counts, even if listed as an "
            "observer's."
        ),
    ] = ()


class Policy(_Document, frozen=True, gc=True, dict=True):
    """What counts as proof. (It keeps a ``__dict__`` for its coverage map, computed once.)"""

    id: Annotated[Text, _doc("Name of the policy, reported in the verdict.")]
    requires: Annotated[tuple[Text, ...], _doc("Check types that must each support the claim.")]
    max_age_s: Annotated[
        PositiveSeconds,
        _doc(
            "Evidence older than this at decision time is treated as absent (seconds, at most "
            "10 years)."
        ),
    ]
    trust: Annotated[Trust | None, _doc("Trust roots; absent means declared mode.")] = None
    covered_by: Annotated[
        Mapping[Text, _CheckTypes],
        _doc(
            "Mutation kind -> the check types that may cover it; each entry replaces the "
            "built-in one (file_write: test_run, deploy: endpoint_health, state_write: "
            "state_readback, ui_action: dom_assertion or state_readback). A kind with no entry "
            "can be covered by nothing."
        ),
    ] = msgspec.field(default_factory=lambda: MappingProxyType({}))
    min_tests: Annotated[
        WholeNumber,
        _doc("A test_run that executed fewer tests, or reports no counts, is not discriminating."),
    ] = msgspec.field(default_factory=lambda: WholeNumber(1))
    allow_test_changes: Annotated[
        bool,
        _doc(
            "Count a test_run whose observer recorded changes to protected test paths "
            "(details.test_config_changed)."
        ),
    ] = False
    experimental_checks: Annotated[
        bool,
        _doc(
            "Count evidence of the experimental check types (dom_assertion); false: such "
            "evidence never counts."
        ),
    ] = True
    require_mutations: Annotated[
        bool,
        _doc(
            "A claim that records no mutation is unverified (no_mutations): nothing changed, so "
            "there is nothing to verify."
        ),
    ] = False
    protected_targets: Annotated[
        tuple[Text, ...],
        _doc(
            "Mutation targets the claim must not change (exact strings, as file_write targets are "
            "relative POSIX paths): a mutation on one leaves the claim unverified "
            "(protected_target_changed)."
        ),
    ] = ()

    def __post_init__(self) -> None:
        # A policy is read once per decision, so freezing its one mapping costs nothing.
        if type(self.covered_by) is not MappingProxyType:
            force_setattr(self, "covered_by", MappingProxyType(dict(self.covered_by)))

    @cached_property
    def coverage(self) -> Mapping[str, frozenset[str]]:
        """For each mutation kind with an entry, the check types that may cover it: the
        built-in map with the policy's entries in place of the kinds they name."""
        merged = {**BUILTIN_COVERED_BY, **self.covered_by}
        return MappingProxyType({kind: frozenset(types) for kind, types in merged.items()})


BUILTIN_POLICY = Policy(id="completion-claim/builtin", requires=(), max_age_s=300)
"""Applies when neither the operator nor the claim names a policy."""


class Claim(_Document, frozen=True):
    """A Completion Claim."""

    spec_version: Annotated[
        str,
        # Not "$": in Python it also matches before a final newline, and "0.1\n" is no version.
        Meta(pattern=r"^0(\.[0-9]+)*(?![\s\S])"),
        _doc("Format version; this implementation reads 0.x."),
    ]
    task: Annotated[Task, _doc("The task.")]
    claimed_outcome: Annotated[AnyText, _doc("What the agent says it achieved.")]
    mutations: Annotated[tuple[Mutation, ...], _doc("The changes the agent made.")]
    evidence: Annotated[tuple[Evidence, ...], _doc("Observations about them.")]
    policy: Annotated[Policy | None, _doc("The policy the producer proposes.")] = None
    verdict: Annotated[
        dict[str, Any] | None,
        _doc("A previous verdict. Never read: the verdict is always recomputed."),
    ] = None
    verdict_attestation: Annotated[
        dict[str, Any] | None,
        _doc(
            "A DSSE envelope by the gate over the verdict and the claim's digest (claim "
            "verify --sign-key); checked by claim check-verdict, never read by verify."
        ),
    ] = None


DOCUMENT_TYPES: tuple[type[Struct], ...] = (
    Claim,
    Task,
    Mutation,
    Evidence,
    VerifierRef,
    Policy,
    Trust,
    TrustedObserver,
)
"""Every object type of the format, for the schema generator."""


# --- conversion --------------------------------------------------------------------------------


def parse_claim(document: object) -> Claim:
    """Build a Claim from decoded JSON, checking types and cross-references."""
    return _claim(document, _Screen())


def parse_policy(document: object, path: str = "") -> Policy:
    return parse_as(Policy, document, path)


def parse_as(
    kind: type[_T], document: object, path: str = "", text: bytes | str | None = None
) -> _T:
    """Convert decoded JSON to one document type; every failure is an InvalidDocument naming
    the place, below ``path`` (where a policy sits inside a configuration file, say). ``text``,
    the JSON the document was decoded from, lets most documents skip two walks."""
    return _convert(kind, document, path, _Screen() if text is None else _Screen.of(text))


def load_claim(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Claim:
    """Parse a claim from JSON text or UTF-8 bytes, at most ``max_bytes`` long in UTF-8."""
    with cycle_collection_paused():
        return _claim(decode_document(data, max_bytes), _Screen.of(data))


def load_policy(data: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> Policy:
    return _convert(Policy, decode_document(data, max_bytes), "", _Screen.of(data))


class _Screen:
    """What a look at the JSON text rules out, so that most documents skip two walks.

    A free-form value nested deeper than ``MAX_DEPTH`` needs more opening brackets than that in
    the text, and an explicit null needs the word ``null`` in it (JSON spells null only so; an
    escape cannot make a keyword). Without the text (a library caller's decoded value), both
    walks run.
    """

    __slots__ = ("may_hold_null", "may_nest_deep")

    def __init__(self, may_hold_null: bool = True, may_nest_deep: bool = True) -> None:
        self.may_hold_null = may_hold_null
        self.may_nest_deep = may_nest_deep

    @classmethod
    def of(cls, data: bytes | str) -> _Screen:
        if isinstance(data, str):
            return cls("null" in data, data.count("[") + data.count("{") > MAX_DEPTH)
        return cls(b"null" in data, data.count(b"[") + data.count(b"{") > MAX_DEPTH)


def _claim(document: object, screen: _Screen) -> Claim:
    claim = _convert(Claim, document, "", screen)
    _check_references(claim)
    check_signature_bounds(item.attestation for item in claim.evidence)
    return claim


def _convert(kind: type[_T], document: object, path: str, screen: _Screen) -> _T:
    try:
        value = msgspec.convert(document, kind, dec_hook=_dec_hook)
    except msgspec.ValidationError as error:
        raise _invalid(str(error), document, path) from None
    if screen.may_hold_null:
        _reject_nulls(document, _plan(kind), path)
    if screen.may_nest_deep:
        _check_depth(value, _plan(kind), path)
    return value


def _check_references(claim: Claim) -> None:
    mutation_ids: set[str] = set()
    for i, mutation in enumerate(claim.mutations):
        if mutation.id in mutation_ids:
            raise InvalidDocument(f"mutations[{i}].id", f"duplicate mutation id {mutation.id!r}")
        mutation_ids.add(mutation.id)
    evidence_ids: set[str] = set()
    for i, item in enumerate(claim.evidence):
        if item.id is not None:
            if item.id in evidence_ids:
                raise InvalidDocument(f"evidence[{i}].id", f"duplicate evidence id {item.id!r}")
            evidence_ids.add(item.id)
        for j, covered in enumerate(item.covers):
            if covered not in mutation_ids:
                raise InvalidDocument(
                    f"evidence[{i}].covers[{j}]", f"names unknown mutation {covered!r}"
                )


# --- what the declarations say beyond msgspec: optional is not nullable, free-form is bounded --


class _Plan:
    """For one document type, read off its fields: the optional members (default None, which
    must not be written as null), the free-form values (whose depth is bounded) and the nested
    document types to descend into (``many`` when an array holds them)."""

    def __init__(self, kind: type[Struct]) -> None:
        info = msgspec.inspect.type_info(kind)
        assert isinstance(info, msgspec.inspect.StructType)
        self.optional: list[tuple[str, str]] = []
        self.free_form: list[tuple[str, str]] = []
        self.nested: list[tuple[str, str, type[Struct], bool]] = []
        for field in info.fields:
            name, attribute = field.encode_name, field.name
            if field.default is None:
                self.optional.append((name, attribute))
            inner = _without_none(field.type)
            if isinstance(inner, msgspec.inspect.AnyType | msgspec.inspect.DictType):
                self.free_form.append((name, attribute))
            elif isinstance(inner, msgspec.inspect.StructType):
                self.nested.append((name, attribute, inner.cls, False))
            elif isinstance(inner, msgspec.inspect.VarTupleType) and isinstance(
                inner.item_type, msgspec.inspect.StructType
            ):
                self.nested.append((name, attribute, inner.item_type.cls, True))


def _without_none(info: msgspec.inspect.Type) -> msgspec.inspect.Type:
    """The type itself, without its description or constraints and, if optional, its None."""
    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    if isinstance(info, msgspec.inspect.UnionType):
        rest = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        if len(rest) == 1:
            return _without_none(rest[0])
    if isinstance(info, msgspec.inspect.VarTupleType):
        return msgspec.inspect.VarTupleType(_without_none(info.item_type))
    return info


_PLANS: dict[type, _Plan] = {}


def _plan(kind: type) -> _Plan:
    plan = _PLANS.get(kind)
    if plan is None:
        plan = _PLANS[kind] = _Plan(kind)
    return plan


def _reject_nulls(document: Any, plan: _Plan, path: str) -> None:
    """Name the first optional member written as null (the conversion has checked the rest)."""
    for name, _ in plan.optional:
        if name in document and document[name] is None:
            raise InvalidDocument(_join(path, name), "must not be null (leave the member out)")
    for child, child_plan, where in _nested(plan, path, lambda name, _: document.get(name)):
        _reject_nulls(child, child_plan, where)


def _check_depth(value: Any, plan: _Plan, path: str) -> None:
    """Bound every free-form value's nesting, so later recursion over it is safe."""
    for name, attribute in plan.free_form:
        member = getattr(value, attribute)
        if type(member) in (dict, list):
            check_depth(member, _join(path, name))
    for child, child_plan, where in _nested(plan, path, lambda _, attr: getattr(value, attr)):
        _check_depth(child, child_plan, where)


def _nested(
    plan: _Plan, path: str, member: Callable[[str, str], Any]
) -> Iterator[tuple[Any, _Plan, str]]:
    """The nested documents present, each with its plan and its place; ``member`` reads one
    by (JSON name, attribute name) from decoded JSON or from a converted value."""
    for name, attribute, kind, many in plan.nested:
        child = member(name, attribute)
        if child is None:
            continue
        where = _join(path, name)
        if many:
            for i, element in enumerate(child):
                yield element, _plan(kind), f"{where}[{i}]"
        else:
            yield child, _plan(kind), where


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# --- msgspec's messages in the project's words --------------------------------------------------

_JSON_TYPES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "null": "null",
    "array": "an array",
    "object": "an object",
    "int | float": "a number",
}

_ALLOWED_BY_MEMBER = {
    "kind": get_args(VerifierKind),
    "mode": get_args(TrustMode),
}


def _invalid(message: str, document: object, prefix: str) -> InvalidDocument:
    """One msgspec ValidationError ("<problem> - at `$.a[0].b`") as the project's error."""
    problem, _, where = message.rpartition(" - at `")
    if not _:
        problem, where = message, "$`"
    if where.startswith("key` in `"):  # a member name of covered_by
        where = where.removeprefix("key` in `")
        problem = "a member name must not be empty"
    if "[...]" in where:
        where = _locate_entry(document, where)
    path = where[:-1].removeprefix("$").removeprefix(".")
    path = f"{prefix}.{path}" if prefix and path and not path.startswith("[") else prefix + path
    if (match := re.fullmatch(r"Object missing required field `(.+)`", problem)) is not None:
        return InvalidDocument(_join(path, match[1]), "required member is missing")
    if (match := re.fullmatch(r"Object contains unknown field `(.+)`", problem)) is not None:
        return InvalidDocument(_join(path, match[1]), "unknown member")
    return InvalidDocument(path, _problem(problem, path, _value_at(document, where[:-1])))


def _locate_entry(document: object, where: str) -> str:
    """``$.policy.covered_by[...]...`` with the member name of the first entry in error."""
    head, _, rest = where.partition("[...]")
    entries = _value_at(document, head)
    if isinstance(entries, dict):
        for name, value in entries.items():
            try:
                msgspec.convert(value, _CheckTypes)
            except msgspec.ValidationError:
                return f"{head}.{name}{rest}"
    return head + rest


def _problem(problem: str, path: str, value: object) -> str:
    if (match := re.fullmatch(r"Expected `(.+?)`, got `(.+)`", problem)) is not None:
        wanted = match[1].removesuffix(" | null")
        return f"expected {_JSON_TYPES.get(wanted, wanted)}, got {type_name(value)}"
    if re.fullmatch(r"Expected `(str|array|object)` of length >= 1", problem):
        return "must not be empty"
    if problem.startswith("Expected `str` matching regex") and path.endswith("spec_version"):
        return f"unsupported spec_version {str(value)[:20]!r} (this reads 0.x)"
    if problem.startswith("Invalid enum value"):
        member = path.rpartition(".")[2]
        if member in _ALLOWED_BY_MEMBER:
            allowed = ", ".join(_ALLOWED_BY_MEMBER[member])
            return f"unknown value {str(value)[:40]!r} (allowed: {allowed})"
        known = ", ".join(KNOWN_CHECK_TYPES)
        return f"unknown check type {str(value)[:40]!r} (known: {known})"
    if re.fullmatch(r"Expected `int` >= 1|Expected `float` > 0\.0", problem):
        return f"must be greater than 0, got {_short(value)}"
    if re.fullmatch(r"Expected `(?:int|float)` <= \d+(?:\.0)?", problem):
        return f"must be at most {MAX_AGE_LIMIT_S} (10 years), got {_short(value)}"
    return problem[:1].lower() + problem[1:]


def _value_at(document: object, where: str) -> object:
    """The value at a msgspec path (``$.evidence[0].at``), for the message; None if not found."""
    node = document
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where.removeprefix("$")):
        try:
            node = node[int(index)] if index else node[name]  # type: ignore[index]
        except (LookupError, TypeError):
            return None
    return node
