"""``python -m eval``: run the evaluation (see ``eval.run``)."""

from __future__ import annotations

from eval.run import main

raise SystemExit(main())
