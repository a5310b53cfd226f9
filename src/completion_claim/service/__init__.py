"""The verification service: a tamper-evident ledger of verdicts, its HTTP API and dashboard.

Needs the ``serve`` extra (``pip install 'completion-claim[serve]'``).
"""
