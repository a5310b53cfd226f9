"""Canaries planted in every test binary of a run (Go's packages, Rust's test targets).

Each test binary is a process of its own, which the code under test can end after writing a
report of its own making: a canary in another binary would say nothing of that one. So the same
canaries go into every binary, and each is one result: the outcome every binary that ran gave
it, or an error naming the first binary that did not run it or gave it another outcome.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from .results import ERROR, FAILED

EVERY_BINARY = "[every test binary]"  # the report name's prefix of a canary


def in_every_binary(
    binaries: Sequence[tuple[str, Mapping[str, str]]],
) -> Iterator[tuple[str, str, str]]:
    """``(report name, outcome, message)`` per canary, from each binary that ran (its name, and
    the outcome of each canary it reported)."""
    names = dict.fromkeys(test for _, outcomes in binaries for test in outcomes)
    for test in names:
        name = f"{EVERY_BINARY}::{test}"
        first = next(outcomes[test] for _, outcomes in binaries if test in outcomes)
        odd = next(
            ((binary, outcomes.get(test)) for binary, outcomes in binaries
             if outcomes.get(test) != first),
            None,
        )  # fmt: skip
        if odd is None:
            said = "the observer's canary failed, as it must" if first == FAILED else ""
            yield name, first, said
        elif odd[1] is None:
            yield name, ERROR, f"the test binary of {odd[0]} did not run it"
        else:
            yield name, ERROR, f"the test binary of {odd[0]} reported it {odd[1]}, another {first}"
