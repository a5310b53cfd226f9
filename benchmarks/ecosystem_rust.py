"""The gate on a small Rust crate: ``cargo test`` in the work tree (the developer's own target
folder, warm after the first run) next to ``claim gate`` (sandbox, a target folder of the run's
own, crates mounted from the operator's cache), and the first gate run after the cache was
emptied (one crate downloaded from a loopback server, checked and unpacked).

Run: ``.venv/bin/python benchmarks/ecosystem_rust.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ecosystem_common import fixed_repo, gate_config, gate_rows, served, show

TINYADD = "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n"
CARGO_TOML = (
    '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n'
    '[dependencies]\ntinyadd = "0.1"\n'
)
LIB = "pub fn add(a: i64, b: i64) -> i64 {\n    tinyadd::add(a, -b)\n}\n"
ARITH = "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"


def crate(root: Path, env: dict[str, str]) -> tuple[Path, str]:
    """tinyadd 0.1.0 packaged by cargo, in a download folder: the folder and its checksum."""
    source = root / "tinyadd"
    (source / "src").mkdir(parents=True)
    (source / "src" / "lib.rs").write_text(TINYADD)
    (source / "Cargo.toml").write_text(
        '[package]\nname = "tinyadd"\nversion = "0.1.0"\nedition = "2021"\n'
        'description = "adds"\nlicense = "MIT"\n'
    )
    subprocess.run(["cargo", "package", "--offline", "--no-verify", "--allow-dirty"],
                   cwd=source, env=env, check=True, capture_output=True)  # fmt: skip
    package = source / "target" / "package" / "tinyadd-0.1.0.crate"
    downloads = root / "dl" / "tinyadd"
    downloads.mkdir(parents=True)
    (downloads / package.name).write_bytes(package.read_bytes())
    return root / "dl", hashlib.sha256(package.read_bytes()).hexdigest()


def measure(runs: int = 5) -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-rust-") as folder:
        root = Path(folder)
        env = {**os.environ, "CARGO_HOME": str(root / "cargo-home")}
        downloads, checksum = crate(root, env)
        lock = (
            'version = 3\n\n[[package]]\nname = "calc"\nversion = "0.1.0"\n'
            'dependencies = [\n "tinyadd",\n]\n\n[[package]]\nname = "tinyadd"\n'
            'version = "0.1.0"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n'
            f'checksum = "{checksum}"\n'
        )
        broken = {"Cargo.toml": CARGO_TOML, "Cargo.lock": lock, "src/lib.rs": LIB,
                  "tests/arith.rs": ARITH, ".gitignore": "/target\n"}  # fmt: skip
        repo = fixed_repo(root, broken, {"src/lib.rs": LIB.replace("-b", "b")})
        config = gate_config(root, ["cargo", "test"])
        # The developer's cargo finds the crate unpacked as the gate's install unpacks it.
        vendor = root / "vendor"
        with tarfile.open(downloads / "tinyadd" / "tinyadd-0.1.0.crate") as archive:
            archive.extractall(vendor, filter="data")
        (vendor / "tinyadd-0.1.0" / ".cargo-checksum.json").write_text(
            json.dumps({"files": {}, "package": checksum})
        )
        bare = ["cargo", "test", "--offline", "--config", 'source.crates-io.replace-with="v"',
                "--config", f'source.v.directory="{vendor}"']  # fmt: skip
        with served(downloads) as url:
            env["CLAIM_CRATES_DOWNLOAD"] = f"{url}/{{crate}}/{{crate}}-{{version}}.crate"
            return gate_rows(root, repo, config, bare, runs, env, "CARGO_TARGET_DIR")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    show("Rust (cargo test), seconds:", measure(parser.parse_args().runs))
