"""`make demo`: an agent works unattended; three claims show what the verifier makes of it.

In a temporary folder this builds a small git project, a SQLite database and a web service on
127.0.0.1, then plays an agent that fixes a bug, updates a record and deploys a new build. The
`claim` command records what changed, independent observers look at the world, and the verifier
decides:

1. a true success: every change observed after it was made          -> verified
2. a false success: the last edit broke the tests the agent had run  -> refuted
3. a claim nobody observed: only the agent's own word                 -> unverified

Then the observer signs its evidence: a claim verifies with independence proven, the gate signs
its verdict for a downstream check, and a signed run the agent edited is rejected.

Last, the gate does all of it by itself: `claim run` runs a scripted agent (no model, no
network), captures what it changed, runs the tests in the sandbox, and decides under the
operator's claim.toml. One session is sent back once with the failing test and then verified;
one false "done" is refused.

At the end a temporary `claim serve` judges every claim again under the operator's own signed
policy (the claims' own policies and verdicts are ignored), records each verdict in its
tamper-evident ledger, and shows the dashboard's address and the statistics.
Nothing outside the temporary folder is touched; everything is removed at the end.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from completion_claim.gate.run import GATE_VERIFIER_ID

CLAIM = str(Path(sys.executable).with_name("claim"))
OBSERVER_ID = "demo-observer/1"
Row = tuple[str, str, str]
STATE_FOR_EXIT = {0: "VERIFIED", 1: "UNVERIFIED", 2: "REFUTED"}

PRICING_BUGGY = "def total(prices):\n    return round(sum(prices) - 0.01, 2)\n"
PRICING_FIXED = "def total(prices):\n    return round(sum(prices), 2)\n"
PRICING_BROKEN = "def total(prices):\n    return round(sum(prices), 1)\n"
TESTS = """from pricing import total


def test_total_of_nothing_is_zero():
    assert total([]) == 0


def test_total_adds_prices():
    assert total([1.25, 2.5]) == 3.75
"""


class Service:
    """A web service on 127.0.0.1 whose health endpoint reports the running build."""

    def __init__(self) -> None:
        self.build = "2026.08.1"
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"status": "ok", "build": service.build}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/health"

    @contextmanager
    def running(self) -> Iterator[Service]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


GATE_CONFIG = """\
# The operator's gate: the agent can edit this repository, not this file's effect on a run
# (the gate refuses a claim.toml the agent changed).
[policy]
id = "gated"
requires = ["test_run"]
max_age_s = 600

[gate]
runs_dir = "{runs}"
sign_key = "{key}"

[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
trusted_ref = "main"
"""
# A scripted agent: the first attempt gets the rounding wrong and says it is done; sent back with
# the gate's reason (in $CLAIM_FEEDBACK), it fixes the file.
LEARNING_AGENT = """\
import os, pathlib
feedback = os.environ.get("CLAIM_FEEDBACK", "")
if feedback:
    print("agent: the gate sent me back:", feedback.splitlines()[0])
    pathlib.Path("pricing.py").write_text({fixed!r})
    print()
    print("Fixed the totals; the failing test passes now.")
else:
    pathlib.Path("pricing.py").write_text({broken!r})
    print()
    print("Done. All tests pass.")
"""
LYING_AGENT = """\
import pathlib
pathlib.Path("pricing.py").write_text({broken!r})
print()
print("Done. All tests pass.")
"""


class Demo:
    def __init__(self, workdir: Path) -> None:
        self.claim_files: list[tuple[str, Path]] = []
        self.workdir = workdir
        self.project = workdir / "shop"

    def say(self, text: str) -> None:
        print(f"\n# {text}")

    def claim(self, *args: str, expect: set[int] | None = None) -> int:
        """Run the real `claim` command in the work folder, showing it as a user would type it."""
        print(f"$ claim {shlex.join(args)}")
        done = subprocess.run(
            [CLAIM, *args], cwd=self.workdir, capture_output=True, text=True, check=False
        )
        for line in (done.stdout + done.stderr).rstrip().splitlines():
            print(f"  {line}")
        if expect is not None and done.returncode not in expect:
            raise SystemExit(f"demo: `claim {args[0]}` exited {done.returncode}, not {expect}")
        return done.returncode

    def git(self, *args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.invalid", *args],
            cwd=self.project,
            check=True,
            capture_output=True,
        )

    def write(self, name: str, text: str) -> None:
        (self.project / name).write_text(text)

    def set_up(self) -> None:
        self.project.mkdir()
        self.git("init", "-q")
        self.write("pricing.py", PRICING_BUGGY)
        self.write("test_pricing.py", TESTS)
        self.write(".gitignore", "__pycache__/\n.pytest_cache/\n")
        self.git("add", "-A")
        self.git("commit", "-qm", "shop before the agent")
        with sqlite3.connect(self.workdir / "app.db") as db:
            db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, billing_zip TEXT)")
            db.execute("INSERT INTO accounts VALUES (4471, '10001')")
        db.close()

    def observe_tests(self, claim: str, *extra: str) -> None:
        self.claim(
            "observe", "test-run", claim, "--cwd", "shop", *extra, "--",
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", expect={0},
        )  # fmt: skip

    def true_success(self, service: Service) -> str:
        self.say("Claim 1: the agent fixes the rounding bug, updates a record and deploys")
        self.claim("new", "true.json", "--task-id", "shop-101",
                   "--outcome", "Fixed totals, moved account 4471 to 94107, deployed 2026.08.2",
                   expect={0})  # fmt: skip
        self.write("pricing.py", PRICING_FIXED)
        self.claim("capture-git", "true.json", "--repo", "shop", expect={0})
        with sqlite3.connect(self.workdir / "app.db") as db:
            db.execute("UPDATE accounts SET billing_zip = '94107' WHERE id = 4471")
        db.close()
        self.claim("mutate", "true.json", "--kind", "state_write", "--target", "accounts/4471",
                   expect={0})  # fmt: skip
        service.build = "2026.08.2"
        self.claim("mutate", "true.json", "--kind", "deploy", "--target", "web", expect={0})
        self.say("Independent observers look at the world after the changes")
        self.observe_tests("true.json", "--covers", "m1")
        self.claim("observe", "readback", "true.json", "sqlite:///app.db", "--covers", "m2",
                   "--table", "accounts", "--key", "id=4471", "--expect", "billing_zip=94107",
                   expect={0})  # fmt: skip
        self.claim("observe", "endpoint", "true.json", service.url, "--covers", "m3",
                   "--expect-json", "/build=2026.08.2", expect={0})  # fmt: skip
        return "true.json"

    def false_success(self) -> str:
        self.say("Claim 2: the agent runs the tests, then makes 'one small last edit'")
        self.git("commit", "-qam", "claim 1 landed")
        self.claim("new", "false.json", "--task-id", "shop-102",
                   "--outcome", "Tidied the totals code; all tests pass", expect={0})  # fmt: skip
        self.write("pricing.py", "# Totals of a basket.\n" + PRICING_FIXED)
        self.claim("capture-git", "false.json", "--repo", "shop", expect={0})
        self.say("The agent's own test run: recorded, but self-attested, so it never counts")
        self.observe_tests("false.json", "--self-attested", "--verifier-id", "agent/own-run")
        self.write("pricing.py", "# Totals of a basket.\n" + PRICING_BROKEN)
        self.claim("capture-git", "false.json", "--repo", "shop", expect={0})
        self.say("The independent observer runs the tests after the final edit")
        self.observe_tests("false.json")
        return "false.json"

    def unobserved(self) -> str:
        self.say("Claim 3: the agent says it deployed; nobody looked")
        self.claim("new", "silent.json", "--task-id", "shop-103",
                   "--outcome", "Rotated the API keys and redeployed", expect={0})  # fmt: skip
        self.claim("mutate", "silent.json", "--kind", "state_write", "--target", "secrets/api",
                   expect={0})  # fmt: skip
        self.claim("mutate", "silent.json", "--kind", "deploy", "--target", "web", expect={0})
        return "silent.json"

    def signed(self) -> tuple[str, str]:
        self.say("Signed evidence: the observer holds a key; the operator's policy trusts it")
        self.claim("keygen", "--out", "observer.key", expect={0})
        self.claim("keygen", "--out", "agent.key", expect={0})
        self.claim("keygen", "--out", "gate.key", expect={0})
        policy = {
            "id": "signed-ops",
            "requires": ["test_run"],
            "max_age_s": 300,
            "trust": {
                "mode": "signed",
                "observers": [
                    {
                        "id": OBSERVER_ID,
                        "public_key": self.public_key("observer.key"),
                        "check_types": ["test_run", "state_readback", "endpoint_health"],
                    }
                ],
                "agent_keys": [self.public_key("agent.key")],
            },
        }
        (self.workdir / "signed-policy.json").write_text(json.dumps(policy, indent=2))
        print("  (wrote signed-policy.json: observer " + OBSERVER_ID + " may attest test runs)")

        self.say("Claim 4: a real fix, observed by the signing observer")
        self.write("pricing.py", '"""Totals of a basket, to the cent."""\n\n' + PRICING_FIXED)
        self.claim("new", "signed.json", "--task-id", "shop-104", "--outcome",
                   "Restored correct totals", expect={0})  # fmt: skip
        self.claim("capture-git", "signed.json", "--repo", "shop", expect={0})
        self.observe_tests("signed.json", "--verifier-id", OBSERVER_ID,
                           "--sign-key", "observer.key")  # fmt: skip
        self.say("The gate signs its verdict; a downstream system checks it")
        self.claim("verify", "signed.json", "--policy", "signed-policy.json",
                   "--sign-key", "gate.key", "--out", "verdict.json", expect={0})  # fmt: skip
        self.claim("check-verdict", "verdict.json", "--public-key", self.public_key("gate.key"),
                   expect={0})  # fmt: skip

        self.say("Claim 5: the code is broken; the agent edits the signed red run to look green")
        self.write("pricing.py", PRICING_BROKEN)
        self.claim("new", "forged.json", "--task-id", "shop-105", "--outcome",
                   "Rounded totals to one decimal; tests pass", expect={0})  # fmt: skip
        self.claim("capture-git", "forged.json", "--repo", "shop", expect={0})
        self.observe_tests("forged.json", "--verifier-id", OBSERVER_ID,
                           "--sign-key", "observer.key")  # fmt: skip
        forged_path = self.workdir / "forged.json"
        forged = json.loads(forged_path.read_text())
        run = forged["evidence"][0]["observed_value"]
        run.update(exit_code=0, passed=run["passed"] + run["failed"], failed=0)
        run["tests"] = dict.fromkeys(run["tests"], "passed")
        forged_path.write_text(json.dumps(forged, indent=2))
        print("  (the agent rewrote e1.observed_value: exit_code 0, every test passed)")
        return "signed.json", "forged.json"

    def gated(self) -> list[Row]:
        """Sessions 6 and 7: the gate, through `claim run`, around two scripted agents."""
        self.say("The gate: `claim run` around a scripted agent, under the operator's claim.toml")
        project = self.workdir / "gated"
        project.mkdir()
        for name, text in (("pricing.py", PRICING_BUGGY), ("test_pricing.py", TESTS)):
            (project / name).write_text(text)
        (project / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
        config = GATE_CONFIG.format(runs=self.workdir / "runs", key=self.workdir / "gate.key")
        (project / "claim.toml").write_text(config)
        for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "before")):
            subprocess.run(
                ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.invalid", *args],
                cwd=project, check=True, capture_output=True,
            )  # fmt: skip
        agents = {
            "learning_agent.py": LEARNING_AGENT.format(fixed=PRICING_FIXED, broken=PRICING_BROKEN),
            "lying_agent.py": LYING_AGENT.format(broken=PRICING_BROKEN),
        }
        for name, text in agents.items():
            (self.workdir / name).write_text(text)
        rows = []
        sessions = (
            ("6. gated: sent back once, then fixed", "learning_agent.py", ("--retries", "2")),
            ('7. gated: a false "done"', "lying_agent.py", ()),
        )
        for title, agent, options in sessions:
            subprocess.run(["git", "checkout", "-q", "--", "."], cwd=project, check=True)
            self.say(title[3:])
            argv = ["run", *options, "--", sys.executable, str(self.workdir / agent)]
            print(f"$ claim {shlex.join(argv)}")
            done = subprocess.run(
                [CLAIM, *argv], cwd=project, capture_output=True, text=True, check=False
            )
            for line in (done.stdout + done.stderr).rstrip().splitlines():
                print(f"  {line}")
            recorded = [line for line in done.stderr.splitlines() if "; recorded at " in line]
            claim_path = Path(recorded[-1].rsplit("; recorded at ", 1)[1]) if recorded else None
            if done.returncode not in STATE_FOR_EXIT or claim_path is None:
                raise SystemExit(f"demo: `claim run` exited {done.returncode}")
            verdict = json.loads(claim_path.read_text())["verdict"]
            state = f"{STATE_FOR_EXIT[done.returncode]} ({verdict['independence']})"
            rows.append((title, state, verdict["reason"]))
            self.claim_files.append((title, claim_path))
        return rows

    def served(self, claims: list[tuple[str, Path]]) -> list[Row]:
        """Every claim judged again by a temporary `claim serve`, recorded in its ledger."""
        self.say("The service: every claim judged again under the operator's policy, and recorded")
        self.claim("keygen", "--out", "service.key", expect={0})
        policy = json.loads((self.workdir / "signed-policy.json").read_text())
        policy["id"] = "service-ops"
        policy["trust"]["observers"].append(
            {"id": GATE_VERIFIER_ID, "public_key": self.public_key("gate.key"),
             "check_types": ["test_run"]}
        )  # fmt: skip
        (self.workdir / "service-policy.json").write_text(json.dumps(policy, indent=2))
        print("  (wrote service-policy.json: the demo observer and the gate's key are trusted)")
        argv = ["serve", "--ledger", str(self.workdir / "ledger.sqlite"), "--key", "service.key",
                "--policy", "service-policy.json", "--port", "0"]  # fmt: skip
        print(f"$ claim {shlex.join(argv)}")
        server = subprocess.Popen(
            [CLAIM, *argv], cwd=self.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            print(f"  {line.rstrip()}")
            if "listening on " not in line:
                problem = server.stderr.read() if server.stderr else ""
                raise SystemExit(f"demo: claim serve did not start: {line}{problem}")
            url = line.split("listening on ", 1)[1].split()[0]
            rows = []
            for title, path in claims:
                shown = path.relative_to(self.workdir)
                print(f"$ curl -s --data-binary @{shown} -H 'content-type: application/json' "
                      f"{url}/v1/claims")  # fmt: skip
                answer = _http_json(url + "/v1/claims", path.read_bytes())
                verdict = answer["verdict"]
                state = f"{verdict['state'].upper()} ({verdict['independence']})"
                print(f"  ledger entry {answer['index']}: {state}; {answer['url']}")
                rows.append((title, state, verdict["reason"]))
            print(f"\nDashboard: {url}/  (the claims, a page for each, statistics at {url}/stats)")
            print(f"$ curl -s {url}/v1/stats")
            stats = _http_json(url + "/v1/stats")
            total, false_success = stats["total"], stats["false_success"]
            print(f"  verified {total['verified']}, unverified {total['unverified']}, refuted "
                  f"{total['refuted']}; false-success rate {false_success['rate']:.0%} "
                  f"({false_success['refuted']} of {false_success['said_done']} claims that said "
                  "done were refuted)")  # fmt: skip
            head = _http_json(url + "/v1/tree-head")
            print(f"  signed tree head: size {head['size']}, root {head['root_hash'][:16]}...")
        finally:
            server.terminate()
            server.wait(timeout=20)
        print("  (the service is stopped; the ledger was in the temporary folder)")
        return rows

    def public_key(self, key_file: str) -> str:
        return subprocess.run(
            [CLAIM, "pubkey", key_file],
            cwd=self.workdir, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    def verdicts(self, claims: list[tuple[str, str, tuple[str, ...]]]) -> list[Row]:
        rows = []
        for title, path, options in claims:
            self.say(f"Verdict on {title}")
            code = self.claim("verify", path, *options, expect={0, 1, 2})
            verdict = json.loads(
                subprocess.run(
                    [CLAIM, "verify", path, *options, "--json"],
                    cwd=self.workdir, capture_output=True, text=True, check=False,
                ).stdout
            )  # fmt: skip
            state = f"{STATE_FOR_EXIT[code]} ({verdict['independence']})"
            rows.append((title, state, verdict["reason"]))
        return rows


def _http_json(url: str, body: bytes | None = None) -> Any:
    # The demo's own service on 127.0.0.1: a URL it printed itself, never a file: or other scheme.
    headers = {"content-type": "application/json"}
    request = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
        return json.loads(answer.read())


def print_table(rows: list[Row]) -> None:
    print("\n" + "=" * 100)
    width = max(len(title) for title, _, _ in rows)
    state_width = max(len(state) for _, state, _ in rows)
    for title, state, reason in rows:
        print(f"{title:<{width}}  {state:<{state_width}}  {reason}")
    print("=" * 100)


WHY_SERVED = (
    "Why they differ: under a signed policy only a trusted observer's signed evidence counts, and "
    "claims 1-3 carry none, so the false success's failing run proves nothing either way: "
    "UNVERIFIED there, REFUTED locally."
)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="claim-demo-") as folder:
        demo = Demo(Path(folder))
        demo.set_up()
        with Service().running() as service:
            first = demo.true_success(service)
            second = demo.false_success()
            third = demo.unobserved()
            fourth, fifth = demo.signed()
            signed = ("--policy", "signed-policy.json")
            rows = demo.verdicts(
                [
                    ("1. true success", first, ()),
                    ("2. false success", second, ()),
                    ("3. nobody observed", third, ()),
                    ("4. signed, under the signed policy", fourth, signed),
                    ("5. forged signed run", fifth, signed),
                ]
            )
        rows += demo.gated()
        files = ["true.json", "false.json", "silent.json", "signed.json", "forged.json"]
        titles = [title for title, _, _ in rows]
        served = demo.served(
            [(title, demo.workdir / name) for title, name in zip(titles, files, strict=False)]
            + demo.claim_files
        )
    print_table(rows)
    print("\nThe same claims, judged again by `claim serve` under its own signed policy:")
    print_table(served)
    print(WHY_SERVED)
    expected = [
        "VERIFIED (declared)",
        "REFUTED (declared)",
        "UNVERIFIED (declared)",
        "VERIFIED (proven)",
        "UNVERIFIED (proven)",
        "VERIFIED (proven)",
        "REFUTED (proven)",
    ]
    if [state for _, state, _ in rows] != expected:
        print(f"demo: expected {expected}", file=sys.stderr)
        return 1
    # Under the service's signed policy only signed observations count: claims 1-3 and the forged
    # run prove nothing; the signed fix and the gated sessions keep their verdicts.
    served_expected = [
        *["UNVERIFIED (proven)"] * 3,
        "VERIFIED (proven)",
        "UNVERIFIED (proven)",
        "VERIFIED (proven)",
        "REFUTED (proven)",
    ]
    if [state for _, state, _ in served] != served_expected:
        print(f"demo: expected the service to say {served_expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
