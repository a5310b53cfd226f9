"""How one ``claim serve`` process is configured. It keeps no state outside the ledger database,
so several processes given the same settings (and the same key) serve one log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..model import BUILTIN_POLICY, Policy

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MERGE_DELAY_S = 1.0
"""The maximum merge delay: how long an entry may be sequenced (durable, with its index) before
a signed tree head covers it (docs/ledger.md)."""


@dataclass(frozen=True)
class ServiceSettings:
    ledger_url: str  # sqlite:///FILE, a plain file path, or postgresql://...
    key_path: Path  # the service's Ed25519 key: signs tree heads and the gate's evidence
    policy: Policy = BUILTIN_POLICY  # the operator's policy; a claim's own is never read
    tokens_path: Path | None = None  # None: writes are open, allowed on loopback only
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    observe_root: Path | None = None  # enables POST /v1/gate for repositories under it
    gate_config: Path | None = None  # the operator's claim.toml for POST /v1/gate
    merge_delay_s: float = DEFAULT_MERGE_DELAY_S  # 0: every append waits for its signed head
