"""The exception root. Verdicts are results, never exceptions; these are for input and usage."""

from __future__ import annotations


class ClaimError(Exception):
    """Root of every error this package raises on purpose. ``str()`` is one readable line."""


class InvalidDocument(ClaimError):
    """A claim or policy that is not a well-formed document. ``path`` names the place in it."""

    def __init__(self, path: str, problem: str, source: str = "") -> None:
        self.path = path
        self.problem = problem
        self.source = source
        super().__init__(": ".join(part for part in (source, path, problem) if part))

    def in_source(self, source: str) -> InvalidDocument:
        """The same error, naming the file (or stdin) it was found in."""
        return InvalidDocument(self.path, self.problem, source)


class UsageError(ClaimError):
    """A command was called in a way it cannot serve (bad option, missing file)."""


class ObservationFailed(ClaimError):
    """An observer could not observe (timeout, refused connection, unreadable report).

    This is not a contradiction: the claim stays unverified. Observers may record the attempt.
    """
