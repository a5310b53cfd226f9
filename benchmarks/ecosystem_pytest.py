"""pytest: what the gate adds per stop on a small project (``benchmarks/gate_latency.py``: a fixed
bug, the bare pytest run in the work tree against ``claim gate``, medians of interleaved runs),
here so that ``benchmarks/ecosystems.py`` shows it beside the other ecosystems. Run:
``.venv/bin/python benchmarks/ecosystem_pytest.py``.
"""

from __future__ import annotations

from gate_latency import measure

__all__ = ["measure"]

if __name__ == "__main__":
    for label, seconds in measure():
        print(f"{label:<44} {seconds:>8.3f}")
