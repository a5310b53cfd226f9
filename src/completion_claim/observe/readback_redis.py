"""Readback from Redis: a hash (HGETALL), or a string holding a JSON object.

A hash is a record whose fields are text, as Redis stores them (so ``--expect count=5`` asserts
the text ``"5"``). A string key must hold a JSON object; its values keep their JSON types. A
missing key is an absent record. Any other value (a string that is not a JSON object, a list, a
set, ...) is not a record this observer can read: that is an ObservationFailed, not a
contradiction. TYPE and both reads run in one MULTI/EXEC, so they see the same moment; none of
them writes.
"""

from __future__ import annotations

from typing import Any

from .._json import decode_bytes, loads
from .._optional import needs_extra
from ..errors import InvalidDocument, ObservationFailed
from .readback_sql import Record
from .values import redact_url, scrub, to_json, url_secrets

with needs_extra("observe", "a Redis readback"):
    import redis


def read_redis(url: str, key: str, timeout: float) -> Record | None:
    shown = f"readback from {redact_url(url)} key {key}"
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        with client, client.pipeline(transaction=True) as pipe:
            pipe.type(key)
            pipe.hgetall(key)
            pipe.get(key)
            # The read that does not fit the key's type answers WRONGTYPE; keep it, unraised.
            kind, fields, value = pipe.execute(raise_on_error=False)
    except (redis.RedisError, ValueError) as error:  # ValueError: a malformed redis:// URL
        raise ObservationFailed(f"{shown}: {scrub(str(error), url_secrets(url))}") from None
    if kind == b"none":
        return None
    if kind == b"hash":
        return {_text(name): _text(member) for name, member in fields.items()}
    if kind == b"string":
        record = _json_object(value)
        if record is None:
            raise ObservationFailed(f"{shown}: the string is not a JSON object, so not a record")
        return record
    raise ObservationFailed(
        f"{shown}: holds a {_text(kind)}; a readback reads a hash or a string holding a JSON object"
    )


def _text(data: bytes) -> Any:
    """UTF-8 text; other bytes as ``base64:...`` (``values.to_json``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return to_json(data)


def _json_object(data: bytes) -> Record | None:
    try:
        document = loads(decode_bytes(data))
    except InvalidDocument:
        return None
    return document if type(document) is dict else None
