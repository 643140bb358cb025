"""A throwaway PostgreSQL cluster on loopback, for the tests that need a real server.

``python -m tests.pgcluster CMD ARGS…`` finds PostgreSQL's binaries (installing Debian's
``postgresql`` package when there are none), creates a cluster in a fresh folder under
``$TMPDIR``, starts it on a free port of 127.0.0.1 with its unix socket inside that folder,
creates the database ``benchproof``, and runs CMD with ``BENCHPROOF_TEST_PG`` set to the
database's URL. It passes CMD's exit code through, and always stops the cluster and removes
the folder, also on SIGINT, SIGTERM and SIGHUP.

Each step prints one line on stderr. CMD's standard output is relayed as it comes and its last
line is printed once more at the very end, after the clean-up lines: CI and the checks read the
last line of the run, and that should be CMD's verdict (pytest's summary), not ours.

``cluster()`` does the same from Python (a benchmark can start one) and yields the base URL.

``initdb`` refuses to run as root, so as root the server's programs run as the ``postgres``
user through ``runuser``. The cluster keeps ``fsync`` and ``synchronous_commit`` on: the
tests rely on acknowledged writes being durable, as they are in production. A Debian package
also starts its own ``main`` cluster on 5432; this module neither uses nor touches it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import IO

DATABASE = "benchproof"
SUPERUSER = "postgres"
ENV_URL = "BENCHPROOF_TEST_PG"
# How long CMD may take to wind up after a signal before it is terminated, then killed.
GRACE_SECONDS = 20.0
# Another process may take the free port between our choosing it and the server binding it:
# a few fresh ports are tried before giving up.
START_ATTEMPTS = 3


class ClusterError(RuntimeError):
    """The cluster could not be installed, created, started or stopped."""


def say(message: str) -> None:
    """One progress line on stderr."""
    print(f"pgcluster: {message}", file=sys.stderr, flush=True)


def _is_root() -> bool:
    return os.geteuid() == 0


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` that holds ``initdb`` and ``pg_ctl``."""
    found = [
        bindir
        for bindir in Path("/usr/lib/postgresql").glob("*/bin")
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file()
    ]
    return max(found, key=_version_key, default=None)


def install() -> None:
    """Installs Debian's ``postgresql`` package with apt-get (through sudo when not root)."""
    sudo = [] if _is_root() else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        # sudo drops the environment by default; `env` carries DEBIAN_FRONTEND across it.
        command = [*sudo, "env", "DEBIAN_FRONTEND=noninteractive", *step]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ClusterError(f"{shlex.join(command)} failed:\n{_tail(done.stdout + done.stderr)}")


def ensure_bindir() -> Path:
    """PostgreSQL's binaries, installed first when the machine has none."""
    bindir = find_bindir()
    if bindir is None:
        say("no PostgreSQL under /usr/lib/postgresql: installing Debian's postgresql package")
        install()
        bindir = find_bindir()
        if bindir is None:
            raise ClusterError("the postgresql package installed no /usr/lib/postgresql/*/bin")
    say(f"using PostgreSQL {bindir.parent.name} from {bindir}")
    return bindir


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _as_server(bindir: Path, program: str, *args: str) -> list[str]:
    """The command line that runs one of the server's programs as the cluster's owner."""
    command = [str(bindir / program), *args]
    return ["runuser", "-u", SUPERUSER, "--", *command] if _is_root() else command


def _server_run(folder: Path, command: list[str], what: str, *, new_session: bool = False) -> None:
    # The folder is the working directory: the postgres user may not be able to enter ours.
    done = subprocess.run(
        command,
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        start_new_session=new_session,
    )
    if done.returncode != 0:
        log = folder / "server.log"
        extra = f"\nserver.log:\n{_tail(log.read_text(errors='replace'))}" if log.exists() else ""
        raise ClusterError(f"{what} failed:\n{_tail(done.stdout + done.stderr)}{extra}")


def _make_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="benchproof-pg-"))
    if _is_root():
        try:
            shutil.chown(folder, SUPERUSER, SUPERUSER)
        except LookupError as error:
            shutil.rmtree(folder)
            raise ClusterError(f"no {SUPERUSER} user to own the cluster: {error}") from error
        reachable = subprocess.run(
            ["runuser", "-u", SUPERUSER, "--", "test", "-w", str(folder)], check=False
        )
        if reachable.returncode != 0:
            shutil.rmtree(folder)
            raise ClusterError(
                f"the {SUPERUSER} user cannot reach {folder}: point TMPDIR at a folder it can"
                " enter (such as /tmp)"
            )
    return folder


def _start(bindir: Path, folder: Path, data: Path, extra: Sequence[str] = ()) -> int:
    """Starts the server on a free loopback port, with the settings ``extra`` (``name=value``)
    besides ours, and returns the port."""
    attempt = 1
    while True:
        port = free_port()
        settings = [
            f"-p {port}",
            f"-k {shlex.quote(str(folder))}",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=200",
            "-c fsync=on",
            "-c synchronous_commit=on",
            *(f"-c {shlex.quote(setting)}" for setting in extra),
        ]
        log = str(folder / "server.log")
        command = _as_server(bindir, "pg_ctl", "start", "-w", "-D", str(data), "-l", log)
        try:
            # A session of its own: a Ctrl-C at the terminal reaches CMD, not the server, so
            # the server outlives CMD and is stopped in order afterwards.
            _server_run(
                folder, [*command, "-o", " ".join(settings)], "pg_ctl start", new_session=True
            )
        except ClusterError:
            if attempt == START_ATTEMPTS or (data / "postmaster.pid").exists():
                raise
            say(f"could not start on port {port}; trying another port")
            attempt += 1
        else:
            return port


def _stop(bindir: Path, folder: Path, data: Path) -> None:
    if not (data / "postmaster.pid").exists():
        return
    say("stopping the cluster")
    _server_run(
        folder,
        _as_server(bindir, "pg_ctl", "stop", "-w", "-m", "fast", "-D", str(data)),
        "pg_ctl stop",
    )


@contextmanager
def cluster(*settings: str) -> Iterator[str]:
    """A running throwaway cluster for the length of the block; yields the URL of its
    ``benchproof`` database (``postgresql://postgres@127.0.0.1:PORT/benchproof``). Each of
    ``settings`` (``name=value``) is passed to the server as a ``-c`` option.

    Raises:
        ClusterError: PostgreSQL could not be installed, or the cluster could not be created,
            started or stopped (the message carries the tail of the tool's output and log).
    """
    bindir = ensure_bindir()
    folder = _make_folder()
    data = folder / "data"
    try:
        say(f"initdb in {data}")
        initdb = ["-D", str(data), "--auth=trust", "--no-locale", "-E", "UTF8", "-U", SUPERUSER]
        _server_run(folder, _as_server(bindir, "initdb", *initdb), "initdb")
        port = _start(bindir, folder, data, settings)
        say(f"started on 127.0.0.1:{port} (socket in {folder})")
        createdb = [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port)]
        _server_run(folder, [*createdb, "-U", SUPERUSER, DATABASE], "createdb")
        say(f"created the database {DATABASE}")
        yield f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"
    finally:
        try:
            _stop(bindir, folder, data)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            say(f"removed {folder}")


class _Interrupted(BaseException):
    """A signal arrived; raised from the handler so that every ``finally`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: list[int] = []


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # Only the first signal interrupts; later ones must not cut the clean-up short.
    if not _received:
        _received.append(signum)
        raise _Interrupted(signum)


class _Relay(threading.Thread):
    """Copies CMD's standard output to ours as it comes and keeps its last non-blank line."""

    def __init__(self, source: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.source = source
        self.last = b""
        self._partial = b""

    def run(self) -> None:
        out = sys.stdout.buffer
        while chunk := os.read(self.source.fileno(), 65536):
            out.write(chunk)
            out.flush()
            lines = (self._partial + chunk).split(b"\n")
            self._partial = lines[-1]
            for line in lines:
                if line.strip():
                    self.last = line


def _wait(child: subprocess.Popen[bytes]) -> int:
    """CMD's exit code; a signal to us is passed on to CMD, which gets a grace period."""
    try:
        return child.wait()
    except _Interrupted as stop:
        say(f"got signal {stop.signum}: stopping the command")
        # A Ctrl-C at the terminal has already reached CMD, in our process group.
        if stop.signum != signal.SIGINT:
            child.send_signal(stop.signum)
        try:
            child.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            child.terminate()
            try:
                child.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise


def run(command: Sequence[str]) -> int:
    """Runs ``command`` against a fresh cluster and returns its exit code (128 + N when it, or
    this run, ended by signal N)."""
    for signum in _SIGNALS:
        signal.signal(signum, _on_signal)
    relay: _Relay | None = None
    code = 1
    try:
        with cluster() as url:
            say(f"running {shlex.join(command)} with {ENV_URL}={url}")
            env = {**os.environ, ENV_URL: url}
            try:
                child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE)
            except OSError as error:
                raise ClusterError(f"cannot run {command[0]}: {error}") from error
            assert child.stdout is not None
            relay = _Relay(child.stdout)
            relay.start()
            code = _wait(child)
            code = 128 - code if code < 0 else code
            # A process CMD left behind may hold the pipe open; its output is not waited for.
            relay.join(timeout=5)
            say(f"the command exited with {code}")
    except ClusterError as error:
        say(f"error: {error}")
        code = 1
    except _Interrupted as stop:
        code = 128 + stop.signum
        say(f"interrupted by signal {stop.signum}")
    if relay is not None and relay.last:
        sys.stdout.buffer.write(relay.last + b"\n")
        sys.stdout.buffer.flush()
    return code


def main(argv: Sequence[str]) -> int:
    """``python -m tests.pgcluster [--] CMD ARGS…``."""
    command = list(argv[1:] if argv[:1] == ["--"] else argv)
    if not command:
        print("usage: python -m tests.pgcluster [--] CMD ARGS…", file=sys.stderr)
        return 2
    return run(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
