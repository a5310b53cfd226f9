"""The ``claim`` group: every command found where it is said to be, each loaded only when used."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from completion_claim import cli
from completion_claim.cli import _COMMAND_MODULES, EXIT_USAGE, app, run


def test_every_command_is_where_the_group_looks_for_it() -> None:
    """Import every module of the package's command line: the commands they register are
    exactly the ones the group lists, so none is hidden and none is missing."""
    for module in pkgutil.iter_modules(cli.__path__):
        importlib.import_module(f"{cli.__name__}.{module.name}")
    assert set(app.commands) == set(_COMMAND_MODULES)
    context = click.Context(app)
    for name in _COMMAND_MODULES:
        assert app.get_command(context, name) is app.commands[name]


def test_verify_loads_neither_the_service_nor_the_gate_nor_an_observer() -> None:
    """``claim verify --batch`` starts in the time its own work needs: the commands it does not
    run are not imported (nor the crypto library, for an unsigned claim)."""
    code = """
import sys
from completion_claim.cli import run
code = run(["verify", "examples/format-note.claim.json", "--at", "2026-08-27T18:04:10Z"])
assert code == 0, code
loaded = [m for m in sys.modules if m.startswith(("completion_claim.service",
    "completion_claim.gate", "completion_claim.observe.endpoint", "completion_claim.observe.dom",
    "completion_claim.observe.readback", "completion_claim.observe.test_run", "cryptography",
    "fastapi", "sqlalchemy", "httpx"))]
assert not loaded, loaded
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _collector_after(argv: list[str]) -> tuple[int, str]:
    """The exit code of ``claim ARGV`` run as the installed program runs it (``cli.main``, in a
    process of its own), and whether the cycle collector was on when the command was done."""
    code = f"""
import atexit, gc, sys
from completion_claim import cli
sys.argv = ["claim", *{argv!r}]
atexit.register(lambda: print(gc.isenabled()))
cli.main()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout.splitlines()[-1]


def test_a_command_runs_without_the_cycle_collector_and_the_service_with_it() -> None:
    """A command runs once and exits (a gate over a monorepo would otherwise have its 100,000s
    of objects walked again and again); ``claim serve`` runs for days and collects cycles."""
    assert _collector_after(["verify", "examples/format-note.claim.json",
                             "--at", "2026-08-27T18:04:10Z"]) == (0, "False")  # fmt: skip
    # Refused before it listens (no tokens off loopback): the service's own start has run.
    assert _collector_after(["serve", "--host", "0.0.0.0"]) == (EXIT_USAGE, "True")


def _exit_of(prelude: str) -> subprocess.CompletedProcess[str]:
    """``claim schema`` run as the installed program runs it, after ``prelude``, with stdout
    buffered as on a machine whose shells do not set PYTHONUNBUFFERED (this workplace's do)."""
    code = f"""
import atexit, sys, threading, time
from completion_claim import cli
{prelude}
atexit.register(lambda: sys.stdout.write("exit handler ran"))  # flushed by the exit
sys.argv = ["claim", "schema"]
cli.main()
"""
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env=buffered,
        timeout=60,  # an exit that waits for the idle worker first never ends
    )
    assert done.returncode == 0, done.stderr
    schema, handler = done.stdout.rsplit("\n", 1)
    assert json.loads(schema)["$id"].endswith("claim.schema.json")
    assert handler == "exit handler ran"
    return done


def test_a_command_exits_after_its_threads_and_exit_handlers_with_its_output_whole(
    tmp_path: Path,
) -> None:
    """``claim`` skips freeing its objects one by one at exit, and nothing else of an exit: a
    thread that is no daemon finishes (an idle pool's workers are told to end, and do), exit
    handlers run, what was printed is all written."""
    late = tmp_path / "written-late"
    _exit_of(f"""
def write_late():
    time.sleep(0.3)
    open({str(late)!r}, "w").write("done")
threading.Thread(target=write_late).start()
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor(max_workers=1)
pool.submit(lambda: None).result()  # its worker left idle, the pool never shut down
""")

    assert late.read_text() == "done"


def test_a_command_with_no_thread_left_runs_its_exit_handlers_and_writes_its_output_whole() -> None:
    """The exit that skips freeing objects (no thread left but the main one, as at a gate's
    end) still runs the exit handlers and flushes what they print."""
    _exit_of("")


@pytest.mark.parametrize("option", ["-q", "--quiet", "-v", "--color=never"])
def test_a_global_option_after_the_command_says_to_put_it_first(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["verify", "claim.json", option]) == 4
    name = option.partition("=")[0]
    assert capsys.readouterr().err == (
        f"claim: {name} is a global option: put it before the command (claim {name} verify ...)\n"
    )


def test_an_unknown_option_is_still_named_as_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", "claim.json", "--quite"]) == 4
    assert "No such option '--quite'" in capsys.readouterr().err


def test_a_misspelt_command_gets_the_nearest_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verfy", "claim.json"]) == 4
    assert capsys.readouterr().err == "claim: No such command 'verfy': did you mean 'verify'?\n"
    assert run(["zzzz"]) == 4
    assert capsys.readouterr().err == "claim: No such command 'zzzz'.\n"


@pytest.mark.parametrize("argv", [[], ["observe"], ["hooks"]])
def test_a_group_without_its_command_prints_its_help_as_it_is(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: the help came out squashed onto one line behind "claim: "."""
    assert run(argv) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"Usage: {' '.join(['claim', *argv])} [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nOptions:\n" in err
    assert "\nCommands:\n" in err
