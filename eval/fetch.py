"""The projects' archives, fetched from their registries into a cache outside the repository.

A cached file is used only when its sha256 is the corpus's; a download whose sha256 differs is
refused and never cached. ``python -m eval.fetch`` fills the cache (``make eval-cache``), so the
suite's slice of the eval runs without a download of its own.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from eval.corpus import CorpusError, Project, load

CACHE_VARIABLE = "COMPLETION_CLAIM_EVAL_CACHE"
CORPUS = Path(__file__).with_name("corpus.toml")


class FetchError(Exception):
    """An archive could not be had or is not the one pinned."""


def cache_dir() -> Path:
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "completion-claim-eval"


def archive_path(project: Project) -> Path:
    return cache_dir() / "archives" / f"{project.name}-{project.version}.{project.archive}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached(project: Project) -> bool:
    path = archive_path(project)
    return path.is_file() and sha256_of(path) == project.sha256


def fetch(project: Project) -> Path:
    """The archive, from the cache or downloaded into it once its sha256 is the pinned one."""
    path = archive_path(project)
    if cached(project):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(project.url, timeout=120) as response:
            body = response.read()
    except OSError as error:
        raise FetchError(f"{project.label}: cannot download {project.url}: {error}") from error
    found = hashlib.sha256(body).hexdigest()
    if found != project.sha256:
        raise FetchError(f"{project.label}: {project.url} has sha256 {found}, not the pinned one")
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as temporary:
        temporary.write(body)
    os.replace(temporary.name, path)
    return path


def unpack(project: Project, destination: Path) -> None:
    """The project's folder of the archive, as ``destination`` (which must not exist)."""
    path = archive_path(project)
    if not cached(project):
        raise FetchError(f"{project.label}: not in the cache {cache_dir()}: run make eval-cache")
    with tempfile.TemporaryDirectory() as scratch:
        with _tar(project, path) as archive:
            archive.extractall(scratch, filter="data")
        shutil.move(os.path.join(scratch, project.root), destination)


def _tar(project: Project, path: Path) -> tarfile.TarFile:
    if project.archive == "tar.gz":
        return tarfile.open(path, "r:gz")
    return tarfile.open(fileobj=io.BytesIO(_deb_data(path)), mode="r:")


def _deb_data(path: Path) -> bytes:
    """The uncompressed ``data.tar`` of a Debian package (an ar archive)."""
    blob = path.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise FetchError(f"{path}: not a Debian package")
    offset = 8
    while offset + 60 <= len(blob):
        header = blob[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        member = blob[offset + 60 : offset + 60 + size]
        if name == "data.tar.xz":
            return lzma.decompress(member)
        if name == "data.tar":
            return member
        offset += 60 + size + (size % 2)
    raise FetchError(f"{path}: no data.tar.xz")


def main() -> int:
    try:
        projects = load(CORPUS)
        for project in projects:
            was_cached = cached(project)
            fetch(project)
            print(
                f"{project.label}: {'cached' if was_cached else 'fetched'} {archive_path(project)}"
            )
    except (CorpusError, FetchError) as error:
        print(f"eval: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
