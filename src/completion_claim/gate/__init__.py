"""The gate: one command that captures an agent's change, observes it and decides, under the
operator's ``claim.toml``. Hooks, ``claim run`` and CI call it; the CLI lives in ``cli/``."""
