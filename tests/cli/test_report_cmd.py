"""``claim report --ledger URL --html FILE`` run as a user runs it: the real executable over a
real SQLite ledger."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ..service._dashboard import assert_self_contained, ledger_with_entries

CLAIM = Path(sys.executable).parent / "claim"


def claim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIM), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_report_writes_the_stats_page_and_prints_its_path(tmp_path: Path) -> None:
    url = ledger_with_entries(tmp_path)
    target = tmp_path / "stats.html"
    done = claim("report", "--ledger", url, "--html", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{target}\n"
    page = target.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "1 of 3 claims that said done were refuted" in page
    assert re.search(r"Written at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(UTC\)\.", page)


def test_report_accepts_a_plain_sqlite_path(tmp_path: Path) -> None:
    ledger_with_entries(tmp_path)
    target = tmp_path / "stats.html"
    done = claim("report", "--ledger", str(tmp_path / "ledger.sqlite"), "--html", str(target))
    assert done.returncode == 0, done.stderr
    assert target.stat().st_size > 0


def test_report_errors_are_one_line(tmp_path: Path) -> None:
    # A ledger that cannot be read is exit 5, as for every ledger command; misuse is 4.
    missing = tmp_path / "missing.sqlite"
    done = claim("report", "--ledger", str(missing), "--html", str(tmp_path / "out.html"))
    assert (done.returncode, done.stdout) == (5, "")
    assert done.stderr == f"claim: no ledger at {missing}\n"
    assert not (tmp_path / "out.html").exists()

    done = claim("report", "--html", str(tmp_path / "out.html"))
    assert done.returncode == 4
    assert "--ledger" in done.stderr
    assert "Traceback" not in done.stderr
