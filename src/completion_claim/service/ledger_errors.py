"""The ledger's errors, apart from the ledger itself so the command line can map them to exit
codes without loading SQLAlchemy (``service.ledger`` re-exports them)."""

from __future__ import annotations

from ..errors import ClaimError


class LedgerError(ClaimError):
    """The ledger's storage, or the service holding it, cannot be opened, read or written
    (one line, the URL's secrets hidden)."""


class LedgerTampered(ClaimError):
    """The stored log is not what its signed heads and its own leaves say it is."""


class NotInLedger(ClaimError):
    """An entry index or tree size beyond what the log holds."""


class NotYetIntegrated(LedgerError):
    """An entry is sequenced (durable, with its index) but no signed tree head covers it yet:
    ask again, it is integrated within the service's merge delay."""
