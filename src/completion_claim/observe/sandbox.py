"""The sandbox a test run executes in: bubblewrap (Debian's ``bubblewrap``), checked before use.

Inside, the run sees only what is mounted: the system directories programs need (read-only), the
interpreter's own prefixes (read-only), the run directory (a copy of the workspace) and the folder
holding the observer's pytest plugin (read-only), at fixed paths. The run directory may be an
overlay (``Overlay``): the operator's mirror of the workspace below, read-only, and a folder of the
run's own above, which takes every write. It is mounted in a mount namespace of the run's own
(util-linux ``unshare``, with a user namespace when the observer is not root: overlayfs mounts
there since Linux 5.11) before bwrap starts, so the host never sees it and the mirror stays as
it was. The workspace, ``/root``,
``/home``, the host's ``/tmp`` and the signing key's folder are simply not there. The run has its
own PID namespace (every process it starts dies with it), its own IPC and host name, no network
unless asked, and a fresh ``/proc`` (the observer's command line is invisible). An observer
running as root also drops to ``nobody`` inside (``setpriv``), with no capabilities and no way to
regain them: a user namespace alone would leave a root-owned key readable to a process that could
reach it. Descriptors the caller passes on (the plugin's pipes) are kept through bwrap and
setpriv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ObservationFailed

WORK = "/run/claim/work"
PLUGINS = "/run/claim/plugin"
REPORTS = "/run/claim/report"  # an empty folder the run writes its report into
NOBODY = 65534
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
MISSING = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap, or pass --no-sandbox"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read from /etc to start; the rest of /etc (and any key kept there) stays out.
_ETC = (
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl/certs",
    # OpenSSL reads its configuration when it starts (node exits 13 when it cannot); a file, so
    # /etc/ssl/private beside it stays out.
    "/etc/ssl/openssl.cnf",
    "/etc/mime.types",
)
_NETWORK_ETC = ("/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf")
_PROBE_TIMEOUT_S = 10.0
# Mounts the overlay ($2 options) on $3 with mount ($1), then becomes the rest: bwrap. Paths come
# as arguments, never as script text.
_MOUNT_SCRIPT = (
    'm=$1 o=$2 d=$3; shift 3; "$m" -t overlay overlay -o "$o" "$d" || exit 125; exec "$@"'
)
_OPTION_SEPARATORS = (",", ":", "\\")


@dataclass(frozen=True)
class Overlay:
    """The run directory as an overlay: ``lower`` (the mirror) read-only below ``upper``, the
    run's own, with overlayfs's ``work`` folder beside it on the same file system."""

    lower: str
    upper: str
    work: str

    def options(self) -> str:
        for path in (self.lower, self.upper, self.work):
            if any(separator in path for separator in _OPTION_SEPARATORS):
                raise ObservationFailed(
                    f"{path}: an overlay cannot be mounted from a path holding ',', ':' or '\\'"
                )
        return f"lowerdir={self.lower},upperdir={self.upper},workdir={self.work}"


@dataclass(frozen=True)
class Sandbox:
    bwrap: str
    version: str
    network: bool
    setpriv: str | None  # set when the observer is root: the run drops to NOBODY

    @classmethod
    def find(cls, *, network: bool, program: str = "bwrap") -> Sandbox:
        bwrap = shutil.which(program)
        if bwrap is None:
            raise ObservationFailed(MISSING)
        setpriv = None
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv", path=SYSTEM_PATH)
            if setpriv is None:
                raise ObservationFailed(
                    "setpriv is not installed (util-linux): the run cannot drop root, "
                    "or pass --no-sandbox"
                )
        version = _version(bwrap)
        return cls(bwrap=bwrap, version=version, network=network, setpriv=setpriv)

    @property
    def uid(self) -> int:
        return NOBODY if self.setpriv is not None else os.geteuid()

    def describe(self) -> str:
        namespaces = "pid namespace, host network" if self.network else "pid+net namespaces"
        user = "" if self.setpriv is not None else ", user namespace"
        return f"bubblewrap {self.version}, uid {self.uid}{user}, {namespaces}"

    def argv(
        self,
        command: Sequence[str],
        *,
        run_dir: str,
        plugin_dir: str | None,
        cwd: str,
        env: Mapping[str, str],
        readable: Sequence[str],
        hidden: Sequence[str],
        report_dir: str | None = None,
        mounts: Sequence[tuple[str, str]] = (),
        overlay: Overlay | None = None,
    ) -> list[str]:
        """The bwrap command running ``command`` in ``cwd`` (a path inside the sandbox).

        ``readable`` folders are mounted read-only at their own paths (the interpreter's
        prefixes); none may hold a ``hidden`` path (the signing key). ``plugin_dir``, when
        given, is mounted read-only at PLUGINS. With ``overlay``, ``run_dir`` is where it is
        mounted first (in the run's own mount namespace)."""
        for folder in readable:
            for secret in hidden:
                if _inside(secret, folder):
                    raise ObservationFailed(
                        f"{secret} lies inside {folder}, which the sandbox mounts for the "
                        "interpreter: keep the key elsewhere"
                    )
        args = [self.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
        args += ["--new-session", "--clearenv"]
        if not self.network:
            args.append("--unshare-net")
        if self.setpriv is None:
            args.append("--unshare-user")
            if overlay is not None:
                # Under unshare's user namespace the observer is root; the run is not.
                args += ["--uid", str(os.geteuid()), "--gid", str(os.getegid())]
        for folder in _SYSTEM_DIRS:
            if os.path.islink(folder):
                args += ["--symlink", os.readlink(folder), folder]
            else:
                args += ["--ro-bind-try", folder, folder]
        etc = (*_ETC, *(_NETWORK_ETC if self.network else ()))
        # Else bwrap makes /etc and /etc/ssl 0700 on the way, and a dropped user reads none of
        # them (node then exits 13 on OpenSSL's configuration).
        for parent in _ancestors(etc):
            args += ["--perms", "0755", "--dir", parent]
        for path in etc:
            args += ["--ro-bind-try", path, path]
        # The scratch /tmp first: a later mount under it (an interpreter in /tmp) stays visible.
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]  # noqa: S108
        # bwrap would copy a parent's host mode (0700 for /root) to the folders it creates on
        # the way to a mount point, and the dropped user could not pass them.
        outside = [seen for _, seen in mounts if not _inside(seen, WORK)]
        for parent in _ancestors([*readable, WORK, PLUGINS, REPORTS, *outside]):
            args += ["--perms", "0755", "--dir", parent]
        for folder in readable:
            args += ["--ro-bind", folder, folder]
        args += ["--bind", run_dir, WORK]
        if plugin_dir is not None:
            args += ["--ro-bind", plugin_dir, PLUGINS]
        if report_dir is not None:
            args += ["--bind", report_dir, REPORTS]
        for host, seen in mounts:
            args += ["--ro-bind", host, seen]
        args += ["--chdir", cwd]
        for name, value in sorted(env.items()):
            args += ["--setenv", name, value]
        args.append("--")
        if self.setpriv is not None:
            args += [self.setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return self._mounting(overlay, run_dir) + args + list(command)

    def _mounting(self, overlay: Overlay | None, run_dir: str) -> list[str]:
        """What mounts ``overlay`` on ``run_dir`` before bwrap starts; nothing without one."""
        if overlay is None:
            return []
        programs = [shutil.which(name, path=SYSTEM_PATH) for name in ("unshare", "mount", "sh")]
        unshare, mount, shell = programs
        if unshare is None or mount is None or shell is None:
            raise ObservationFailed("unshare and mount (util-linux) are needed to mount the run")
        namespaces = ["-m"] if self.setpriv is not None else ["-U", "-r", "-m"]
        return [unshare, *namespaces, "--propagation", "private", "--", shell, "-c",
                _MOUNT_SCRIPT, "sh", mount, overlay.options(), run_dir]  # fmt: skip

    def probe(
        self,
        command: Sequence[str],
        run_dir: str,
        plugin_dir: str | None,
        readable: Sequence[str],
        overlay: Overlay | None = None,
    ) -> None:
        """Run the toolchain's probe ``command`` in the same sandbox; refused unless the sandbox
        starts it. A run that failed is believed only after this: a broken sandbox never passes
        for a failed test."""
        argv = self.argv(
            command,
            run_dir=run_dir,
            plugin_dir=plugin_dir,
            cwd=WORK,
            env={"PATH": SYSTEM_PATH},
            readable=readable,
            hidden=(),
            overlay=overlay,
        )
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        except OSError as exc:
            raise ObservationFailed(f"the sandbox (bwrap) does not start: {exc}") from None
        try:
            _, err = process.communicate(timeout=_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            _end(process)
            raise ObservationFailed(f"the sandbox (bwrap) does not start: {exc}") from None
        if process.returncode != 0:
            complaint = err.decode(errors="replace").strip().splitlines()
            reason = complaint[-1] if complaint else f"exit {process.returncode}"
            raise ObservationFailed(f"the sandbox (bwrap) cannot start {command[0]}: {reason}")


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill a probe past its time and reap it, never waiting for its pipe: a process the
    sandbox left may hold it open."""
    process.kill()
    process.wait()
    if process.stderr is not None:
        process.stderr.close()


def run_owner() -> int | None:
    """Who owns the files a sandboxed run is given: NOBODY when the observer is root (the run
    drops to it), else the observer (None: no change of owner)."""
    return NOBODY if os.geteuid() == 0 else None


def _version(bwrap: str) -> str:
    try:
        done = subprocess.run(
            [bwrap, "--version"], capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ObservationFailed(f"cannot run {bwrap}: {exc}") from None
    words = done.stdout.decode(errors="replace").split()
    if done.returncode != 0 or not words:
        raise ObservationFailed(f"{bwrap} --version failed: it is not a working bubblewrap")
    return words[-1]


def _ancestors(paths: Sequence[str]) -> list[str]:
    found: dict[str, None] = {}
    for path in paths:
        parts = path.strip("/").split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            found["/" + "/".join(parts[:depth])] = None
    return [parent for parent in found if not os.path.lexists(parent) or not _system(parent)]


def _system(path: str) -> bool:
    return any(path == folder or path.startswith(folder + "/") for folder in _SYSTEM_DIRS)


def _inside(path: str, folder: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip("/") + "/")
