"""The verification service: a tamper-evident ledger of verdicts, its HTTP API and dashboard.

Needs the ``serve`` extra (``pip install 'completion-claim[serve]'``), except ``records``,
``merkle``, ``settings`` and ``ledger_errors``: plain Python, which every command may import
without it.
"""
