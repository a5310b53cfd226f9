"""RFC 3339 timestamps: offsets required, exact instants, impossible values rejected."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from completion_claim import InvalidDocument
from completion_claim.timefmt import format_time, parse_time


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-08-27T18:04:02Z", datetime(2026, 8, 27, 18, 4, 2, tzinfo=UTC)),
        ("2026-08-27t18:04:02z", datetime(2026, 8, 27, 18, 4, 2, tzinfo=UTC)),
        ("2026-08-27T20:04:02+02:00", datetime(2026, 8, 27, 18, 4, 2, tzinfo=UTC)),
        ("2026-08-27T18:04:02-00:00", datetime(2026, 8, 27, 18, 4, 2, tzinfo=UTC)),
        ("2026-08-27T18:04:02.5Z", datetime(2026, 8, 27, 18, 4, 2, 500000, tzinfo=UTC)),
        ("2026-08-27T18:04:02.123456789Z", datetime(2026, 8, 27, 18, 4, 2, 123456, tzinfo=UTC)),
    ],
)
def test_valid_times_parse_to_the_instant(text: str, instant: datetime) -> None:
    assert parse_time(text, "at") == instant


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2026-08-27T18:04:02", "no UTC offset"),
        ("2026-08-27 18:04:02Z", "not an RFC 3339"),
        ("2026-08-27", "not an RFC 3339"),
        ("20260827T180402Z", "not an RFC 3339"),
        ("2026-02-29T00:00:00Z", "impossible date-time"),
        ("2026-08-27T24:00:00Z", "impossible date-time"),
        ("2026-12-31T23:59:60Z", "impossible date-time"),
        ("2026-08-27T18:04:02+24:00", "impossible UTC offset"),
        ("2026-08-27T18:04:02Z\n", "not an RFC 3339"),
    ],
)
def test_invalid_times_are_rejected_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(InvalidDocument) as caught:
        parse_time(text, "evidence[2].at")
    assert caught.value.path == "evidence[2].at"
    assert problem in caught.value.problem


def test_format_is_utc_with_z_and_only_needed_precision() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 1, 1, 2, 0, tzinfo=plus_two)) == "2026-01-01T00:00:00Z"
    assert (
        format_time(datetime(2026, 1, 1, 0, 0, 0, 7, tzinfo=UTC)) == "2026-01-01T00:00:00.000007Z"
    )


def test_format_then_parse_round_trips() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    assert parse_time(format_time(moment), "") == moment


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00+23:59",
        "0001-01-01T23:58:59.999999+23:59",
        "0001-01-01T00:00:00+00:01",
        "9999-12-31T23:59:59-23:59",
        "9999-12-31T00:01:00-23:59",
        "9999-12-31T23:59:59.999999-00:01",
    ],
)
def test_attack_10_extreme_offset_times(text: str) -> None:
    """Valid RFC 3339, but the instant is before year 1 or after 9999 in UTC, where every time
    is compared and printed: invalid input naming the place, not a crash in the report."""
    with pytest.raises(InvalidDocument) as caught:
        parse_time(text, "mutations[0].at")
    assert caught.value.path == "mutations[0].at"
    assert "outside the representable range" in caught.value.problem


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("0001-01-01T23:59:00+23:59", "0001-01-01T00:00:00Z"),
        ("0001-01-01T00:00:00-23:59", "0001-01-01T23:59:00Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
        ("9999-12-31T00:00:00-23:59", "9999-12-31T23:59:00Z"),
        ("9999-12-31T23:59:59+23:59", "9999-12-31T00:00:59Z"),
    ],
)
def test_the_edge_times_that_are_valid_print_as_rfc_3339(text: str, printed: str) -> None:
    """Control: the first and last instants in range parse, print (year 1 as 0001) and
    round-trip."""
    moment = parse_time(text, "at")
    assert format_time(moment) == printed
    assert parse_time(printed, "at") == moment
