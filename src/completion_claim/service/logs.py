"""``claim serve --log-format json``: one JSON object per log line, for a log collector.

Every line has time, level, logger and message; an access-log line (``--access-log``) adds the
request's method, path, status and duration in milliseconds, as fields a collector can query.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

# What service.metrics attaches to an access-log record.
ACCESS_FIELDS = ("method", "path", "status", "duration_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, object] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in ACCESS_FIELDS:
            if field in record.__dict__:
                line[field] = record.__dict__[field]
        if record.exc_info:
            # Inside the one object: a traceback on lines of its own would break the stream.
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
