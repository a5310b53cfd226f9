"""Readback from an HTTP(S) JSON resource: the record is the JSON object at the URL.

A 2xx response must be a JSON object. 404 and 410 mean the record is absent (an observation).
Any other status, a redirect (not followed: the record is read where it lives), or a body that
is not a JSON object means the record could not be read: an ObservationFailed.
"""

from __future__ import annotations

from ..errors import ObservationFailed
from ..model import ABSENT
from .endpoint import fetch, parse_json
from .readback_sql import Record
from .values import redact_url

ABSENT_STATUSES = (404, 410)


def read_http(url: str, timeout: float) -> Record | None:
    response = fetch("GET", url, timeout, follow_redirects=False)
    shown = f"readback from {redact_url(url)}"
    if response.status in ABSENT_STATUSES:
        return None
    if not 200 <= response.status < 300:
        location = response.headers.get("location")
        to = f" to {redact_url(location)}" if location else ""
        raise ObservationFailed(f"{shown}: HTTP {response.status}{to}; no record was read")
    document = parse_json(response.body)
    if document is ABSENT or type(document) is not dict:
        raise ObservationFailed(f"{shown}: the body is not a JSON object, so not a record")
    return document
