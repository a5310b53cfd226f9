"""What an operator's probes and Prometheus read: ``GET /healthz``, ``GET /readyz`` and
``GET /metrics``, and the middleware that times every request (and writes the access log).

The metrics are this process's own (counters start at zero on each start), in a registry of the
app's own, so two apps in one process never share a series. The ledger's size is read from the
ledger when scraped, so every process serving one log reports the same number.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from anyio import CapacityLimiter, to_thread
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ClaimError
from .errors import error_body
from .ledger import Ledger

ACCESS_LOGGER = "completion_claim.access"
_access = logging.getLogger(ACCESS_LOGGER)

# Every label value comes from a fixed set: a series is kept for the life of the process, so a
# label a client chooses (a path, a made-up method) would grow the service's memory, and every
# scrape, with each new value. A path no route matched is this one route:
UNMATCHED = "unmatched"
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
OTHER_METHOD = "other"
# A gate run takes as long as the operator's checks (a test suite): seconds to minutes.
GATE_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
GATE_FAILED = "error"  # the label of a gate run that reached no verdict

router = APIRouter(include_in_schema=False)  # operations, not the API: kept out of /openapi.json


class Metrics:
    """The app's registry and the series the routes move."""

    def __init__(self, ledger: Ledger) -> None:
        self.registry = CollectorRegistry()
        self.claims = Counter(
            "claim_claims",
            "Claims this process decided and recorded, by verdict and by how they came "
            "(api: POST /v1/claims, gate: POST /v1/gate).",
            ["verdict", "via"],
            registry=self.registry,
        )
        self.gate_runs = Histogram(
            "claim_gate_run_seconds",
            "Gate runs (POST /v1/gate) and how long each took, by verdict ('error': none).",
            ["verdict"],
            buckets=GATE_BUCKETS,
            registry=self.registry,
        )
        self.requests = Histogram(
            "claim_http_request_duration_seconds",
            "Requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.registry.register(_LedgerCollector(ledger))

    def claim_recorded(self, state: str, via: str) -> None:
        self.claims.labels(verdict=state, via=via).inc()

    @contextmanager
    def gate_run(self) -> Iterator[list[str]]:
        """Time one gate run; the caller appends the verdict's state, else it counts as
        failed."""
        outcome: list[str] = []
        started = time.perf_counter()
        try:
            yield outcome
        finally:
            state = outcome[0] if outcome else GATE_FAILED
            self.gate_runs.labels(verdict=state).observe(time.perf_counter() - started)
            if outcome:
                self.claim_recorded(state, "gate")


class _LedgerCollector(Collector):
    """The ledger's size at scrape time, and whether the ledger answered."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("claim_ledger_up", "1 when the ledger answered this scrape.")
        try:
            integrated, size = self._ledger.sizes()
        except ClaimError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield GaugeMetricFamily(
            "claim_ledger_entries", "Entries in the ledger (claims, gate runs, starts).", size
        )
        # Apart from the entries, so that an operator sees the merge lag (and an integrator
        # that stopped) as their difference.
        yield GaugeMetricFamily(
            "claim_ledger_integrated", "Entries under the latest signed tree head.", integrated
        )


def metrics_of(app: Any) -> Metrics:
    metrics: Metrics = app.state.metrics
    return metrics


# --- routes -----------------------------------------------------------------------------------


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process answers. It reads nothing, so a slow ledger never gets a live
    service restarted."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(request: Request) -> dict[str, str] | JSONResponse:
    """Readiness: the ledger answers a query now, on a connection of its own."""
    url: str = request.app.state.settings.ledger_url
    reason = await to_thread.run_sync(ledger_unready, url, limiter=_probes(request))
    if reason is not None:
        return JSONResponse(error_body(reason), status_code=503)
    return {"status": "ready"}


def ledger_unready(url: str) -> str | None:
    """Why the ledger at ``url`` does not answer, or None when it does.

    The probe opens the ledger afresh rather than asking the app's pool: a pooled connection
    opened before the database went away (a file made unreadable, a database dropped) can go
    on answering while no new one could be made.
    """
    try:
        probe = Ledger.open(url)  # no key: read-only, and it checks the schema is the newest
        try:
            probe.tree_head()
        finally:
            probe.close()
    except ClaimError as error:
        return str(error)
    return None


def _probes(request: Request) -> CapacityLimiter:
    """One readiness probe at a time: a flood of probes queues instead of opening a database
    connection each."""
    limiter: CapacityLimiter | None = getattr(request.app.state, "readiness_probes", None)
    if limiter is None:
        limiter = request.app.state.readiness_probes = CapacityLimiter(1)
    return limiter


@router.get("/metrics")
def metrics(request: Request) -> Response:
    body = generate_latest(metrics_of(request.app).registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


# --- the middleware ---------------------------------------------------------------------------


class RequestTimer:
    """Times each HTTP request into the latency histogram, under its route's template, and
    writes its access-log line (when that logger is on)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the client gets when the app raises before answering
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"]
            known = method if method in METHODS else OTHER_METHOD
            route = route_template(scope)
            self.metrics.requests.labels(method=known, route=route, status=str(status)).observe(
                seconds
            )
            if _access.isEnabledFor(logging.INFO):
                # As sent (percent-encoded): a decoded %0A would start a forged line of its own.
                path = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
                duration_ms = round(seconds * 1000, 1)
                _access.info(
                    "%s %s %d %.1fms", method, path, status, duration_ms,
                    extra={"method": method, "path": path, "status": status,
                           "duration_ms": duration_ms},
                )  # fmt: skip


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/v1/claims/{index}``), never the raw path."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return template if isinstance(template, str) else UNMATCHED


def install(app: FastAPI, ledger: Ledger) -> None:
    app.state.metrics = Metrics(ledger)
    app.include_router(router)
    app.add_middleware(RequestTimer, metrics=app.state.metrics)
