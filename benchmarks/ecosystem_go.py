"""The gate on a small Go module: ``go test ./...`` in the work tree (the developer's own build
cache, warm after the first run) next to ``claim gate`` (sandbox, a build cache of the run's own,
modules mounted from the operator's cache), and the first gate run after the cache was emptied
(``go mod download`` of one module from a loopback module proxy).

Run: ``.venv/bin/python benchmarks/ecosystem_go.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ecosystem_common import fixed_repo, gate_config, gate_rows, served, show

GREET = 'package greet\n\nfunc Hello(name string) string { return "hello " + name }\n'
GO_MOD = "module example.com/app\n\ngo 1.19\n\nrequire example.com/greet v1.0.0\n"
APP = 'package app\n\nimport "example.com/greet"\n\nfunc Hi() string { return greet.Hello("ap") }\n'
APP_TEST = (
    'package app\n\nimport "testing"\n\nfunc TestHi(t *testing.T) {\n'
    '\tif got := Hi(); got != "hello app" {\n\t\tt.Fatal(got)\n\t}\n}\n'
)


def module_proxy(root: Path) -> Path:
    """A proxy folder serving example.com/greet v1.0.0."""
    versions = root / "proxy" / "example.com" / "greet" / "@v"
    versions.mkdir(parents=True)
    module = "module example.com/greet\n\ngo 1.19\n"
    (versions / "list").write_text("v1.0.0\n")
    (versions / "v1.0.0.info").write_text('{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}')
    (versions / "v1.0.0.mod").write_text(module)
    with zipfile.ZipFile(versions / "v1.0.0.zip", "w") as archive:
        archive.writestr("example.com/greet@v1.0.0/go.mod", module)
        archive.writestr("example.com/greet@v1.0.0/greet.go", GREET)
    return root / "proxy"


def measure(runs: int = 5) -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-go-") as folder:
        root = Path(folder)
        with served(module_proxy(root)) as proxy:
            env = {**os.environ, "GOPROXY": proxy, "GONOSUMDB": "example.com",
                   "GOFLAGS": "-mod=mod -modcacherw", "GOMODCACHE": str(root / "modcache"),
                   "GOCACHE": str(root / "gocache"), "GOTOOLCHAIN": "local"}  # fmt: skip
            seed = root / "seed"
            seed.mkdir()
            (seed / "go.mod").write_text(GO_MOD)
            (seed / "app.go").write_text(APP)
            subprocess.run(["go", "mod", "tidy"], cwd=seed, env=env, check=True,
                           capture_output=True)  # fmt: skip
            broken = {"go.mod": GO_MOD, "go.sum": (seed / "go.sum").read_text(), "app.go": APP,
                      "app_test.go": APP_TEST}  # fmt: skip
            repo = fixed_repo(root, broken, {"app.go": APP.replace('"ap"', '"app"')})
            config = gate_config(root, ["go", "test", "./..."])
            return gate_rows(root, repo, config, ["go", "test", "./..."], runs, env, "GOCACHE")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    show("Go (go test ./...), seconds:", measure(parser.parse_args().runs))
