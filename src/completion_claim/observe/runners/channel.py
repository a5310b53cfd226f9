"""What a runner's plugin sends through the observer's channel, checked the same way for every
runner with a plugin (pytest, unittest).

Each record is one line: the HMAC-SHA256 of its JSON under the run's key, a space, and the JSON,
whose ``seq`` numbers the records from 0. The last record is ``{"seq": n, "end": true}``, sent by
the plugin at its run's own end. A stream counts only when every record is bound to the key, in
order, and the end record closes it: a run that ended first (``os._exit``, a signal, a crash),
or a record someone else wrote, reports no counts. A record ``{"seq": n, "monitor": {"event",
"file", "line"}}`` is the runtime monitor's (:mod:`..runtime_monitor`), kept whether or not the
stream counts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

from .results import MAX_REPORT_BYTES, SEVERITY, Results, no_counts, tally

# A record's test (as the runner names it), its outcome (None: nothing to count, e.g. a passed
# setup phase) and its message.
Outcome = tuple[str, str | None, str]


class Refused(Exception):
    """A record that cannot be counted; the message completes "record N ..."."""


def read_records(
    stream: bytes,
    key: bytes,
    runner: str,
    outcome: Callable[[dict[str, Any]], Outcome],
    report_name: Callable[[str], str] = str,
    span: str = "run",
) -> Results:
    """The runner's records, when every one is bound to this run's key, in order, and the last
    ends its ``span`` (pytest's session, a run); otherwise no counts, and why. Each test keeps
    its worst outcome; its name is ``report_name`` of the name its records gave."""
    if len(stream) > MAX_REPORT_BYTES:
        return no_counts(f"its report was over {MAX_REPORT_BYTES} bytes")
    if not stream:
        return no_counts(
            f"{runner} reported nothing: it did not run with the plugin, or did not reach its "
            f"{span}'s end"
        )
    lines = stream.split(b"\n")
    tests: dict[str, tuple[str, str]] = {}  # test: worst outcome and its message
    monitored: list[tuple[str, str, int]] = []

    def seen(results: Results) -> Results:
        return dataclasses.replace(results, monitored=tuple(monitored))

    for number, line in enumerate(lines[:-1]):
        try:
            record = _record(line, number, key)
            if record.get("end") is True:
                if number != len(lines) - 2 or lines[-1]:
                    return seen(no_counts(f"record {number + 2} follows the {span}'s end"))
                return seen(tally(
                    (report_name(test), found, message) for test, (found, message) in tests.items()
                ))  # fmt: skip
            if "monitor" in record:
                monitored.append(_monitored(record))
                continue
            test, found, message = outcome(record)
        except Refused as refused:
            return seen(no_counts(f"record {number + 1} {refused}"))
        if found is not None and (test not in tests or SEVERITY[found] > SEVERITY[tests[test][0]]):
            tests[test] = (found, message)
    return seen(no_counts(
        f"{runner} did not reach its {span}'s end (the run exited, was killed or crashed first)"
    ))  # fmt: skip


def _monitored(record: dict[str, Any]) -> tuple[str, str, int]:
    found = record["monitor"]
    if (
        set(record) != {"seq", "monitor"}
        or type(found) is not dict
        or set(found) != {"event", "file", "line"}
        or type(found["event"]) is not str
        or type(found["file"]) is not str
        or type(found["line"]) is not int
    ):
        raise Refused("is not the monitor's")
    return text(found["event"]), text(found["file"]), found["line"]


def _record(line: bytes, number: int, key: bytes) -> dict[str, Any]:
    mac, _, body = line.partition(b" ")
    if not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).hexdigest().encode()):
        raise Refused("is not bound to this run: something else wrote to the runner's pipe")
    try:
        record = json.loads(body)
    except ValueError:
        raise Refused("is not JSON") from None
    if type(record) is not dict or record.get("seq") != number:
        raise Refused("is out of order")
    return record


def text(value: str) -> str:
    """JSON may carry a lone surrogate (from a file name that is not UTF-8); a claim may not."""
    return value.encode("utf-8", "replace").decode("utf-8")
