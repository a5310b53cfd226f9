"""``python -m completion_claim``: the same as the ``claim`` command."""

from .cli import main

main()
