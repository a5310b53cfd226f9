"""What the machine lets this process use."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity masks on this platform
        return os.cpu_count() or 1
