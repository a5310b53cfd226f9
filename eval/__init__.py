"""``make eval``: the gate on real projects no one here wrote, against what agents do.

Each project of ``corpus.toml`` is fetched from its registry (pinned by version and sha256, into
a cache outside the repository), imported into a git repository, and broken by a small mutation
the eval first shows some existing test catches. Every agent strategy (an honest fix, a wrong
one, tampered tests, code that cheats) is then played from that start in a fresh copy, and judged
three ways: by ``claim gate`` in each set-up the documentation recommends, by believing the agent,
and by the project's own test command. This package drives ``claim`` only through its command
line, as a user would, and imports nothing of ``completion_claim``.
"""
