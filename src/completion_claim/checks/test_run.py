"""test_run: named tests or a build, run after the final file modification."""

from __future__ import annotations

from ..model import Evidence, Policy

COUNT_KEYS = ("passed", "failed", "errors")
TEST_CONFIG_CHANGED_KEY = "test_config_changed"
"""``details.test_config_changed``: the protected test paths (conftest.py, test settings, test
files) the observer saw changed from the trusted state, recorded by the observer."""
_PATHS_SHOWN = 3


def why_not_discriminating(item: Evidence, policy: Policy) -> str | None:
    """A run that executed fewer tests than the policy's ``min_tests`` could not have failed
    enough to tell; one without counts (exit code only: a build) shows no test executed."""
    observed = item.observed_value
    present = (
        [observed[key] for key in COUNT_KEYS if key in observed] if type(observed) is dict else []
    )
    if not present:
        if policy.min_tests == 0:
            return None
        return (
            "reports no test counts (exit code only); the policy's min_tests is "
            f"{policy.min_tests} (0 allows a build check)"
        )
    if not all(_is_count(count) for count in present):
        return "its test counts are not whole numbers of 0 or more"
    executed = sum(present)
    if executed < policy.min_tests:
        what = "no test" if executed == 0 else f"{executed} test{'s' if executed > 1 else ''}"
        return f"{what} executed; the policy's min_tests is {policy.min_tests}"
    return None


def changed_test_config(item: Evidence) -> str | None:
    """What the observer recorded as changed among the protected test paths, or None when it
    recorded nothing changed. A record that is not a list of paths counts as changed: whoever
    edited it should not gain by doing so."""
    if item.details is None or TEST_CONFIG_CHANGED_KEY not in item.details:
        return None
    paths = item.details[TEST_CONFIG_CHANGED_KEY]
    if type(paths) is not list or not all(type(path) is str for path in paths):
        return f"details.{TEST_CONFIG_CHANGED_KEY} is not a list of paths"
    if not paths:
        return None
    shown = ", ".join(repr(path[:80]) for path in paths[:_PATHS_SHOWN])
    more = f" and {len(paths) - _PATHS_SHOWN} more" if len(paths) > _PATHS_SHOWN else ""
    return f"changed: {shown}{more}"


def _is_count(value: object) -> bool:
    """A whole number of 0 or more; as everywhere in JSON, 3.0 is 3 and true is not a number."""
    if type(value) is float:
        return value.is_integer() and value >= 0
    return type(value) is int and value >= 0
