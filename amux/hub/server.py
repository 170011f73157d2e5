"""The Hub process: HTTP/1.1 JSON on the owner's Unix socket (SPEC §4).

The sockets are served by `amux.hub.loop` (one event loop, a small worker pool
for searches and durable writes; the module says why), searches mostly scan in a
child process (`amux.hub.searcher`), requests are framed by
`amux.hub.http`, and answered by `amux.hub.api.HubApi`; this module owns the
process: listeners, pid file, owner credential, signals and clean shutdown.

Layout under `<AMUX_HOME>`: `run/` (0700) holds `hub.sock` (or a short fallback
path when that is too long for a Unix socket) and `hub.pid`; `credentials/owner.json`
(0600) is the owner's connection config (SPEC Appendix A), created on first start.

Every socket directory is created or verified by `amux.sockdir` before a
bind (a directory someone else controls would let them listen in the Hub's
place). With `listeners.shared_socket` set, a second socket (mode 0666, in a
directory of the Hub's, at most 0755) serves isolated runs: every request there
still needs a token, and administration is refused there. Listener changes apply
when the Hub restarts. With `listeners.tls_address` (plus `tls_cert`/`tls_key`), a TLS TCP listener
serves remote Runtimes the same way (tokens required, no administration).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import amux
from amux import __version__, daemon, pidfile, sockdir
from amux.daemon import DETACH
from amux.durable import write_file_atomic
from amux.errors import AmuxError, InvalidArgument
from amux.faults import storage_error
from amux.hub.api import HubApi
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.hub.loop import EventLoop, Listener, connection_cap
from amux.hub.paths import log_path, owner_socket_path, pid_path
from amux.hub.searcher import SearchProcess
from amux.memory.history import History
from amux.memory.store import Store
from amux.memory.versions import VersionStore

log = logging.getLogger("amux.hub")

SWITCH_INTERVAL_SECONDS = 0.001
"""How long a thread holding the GIL may keep it from one that waits (Python's default:
5 ms). The loop thread answers `get` inline and needs the GIL back after every system
call; with searches running on the workers it waited up to 5 ms each time."""
BACKLOG = 1024
"""The default 5 makes a burst of connects fail with EAGAIN; hundreds of sessions may
connect at once (the kernel caps it at net.core.somaxconn)."""


class Hub:
    """One Hub over `<home>/memory`: opens the store exclusively and serves until stopped."""

    def __init__(self, home: Path, owner: str | None = None) -> None:
        self.home = home
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.history: VersionStore = History(home / "history")
        self.store = Store(home / "memory", exclusive=True, history=self.history)
        self.searches = SearchProcess(self.store.search_here)
        self.store.searcher = self.searches
        _report_tidy(self.store)
        self.registry = Registry(home)
        self.config = ConfigFile(home)
        self.api = HubApi(self.store, self.registry, self.config, status=self.status)
        self.socket_path = owner_socket_path(home)
        self.pid_path = pid_path(home)
        self._ensure_owner(owner or _default_owner())
        self._reload = threading.Event()
        self._next_install_check = 0.0
        self._code_missing = False
        self._loop: EventLoop | None = None
        self._shared_path: Path | None = None
        self._tls_address: str | None = None
        self._history_caught_up = threading.Event()

    def _ensure_owner(self, name: str) -> None:
        issued = self.registry.ensure_owner(name)
        if issued is None:
            return
        credentials = self.home / "credentials"
        credentials.mkdir(mode=0o700, exist_ok=True)
        connection = {"version": 1, "hub": f"unix:{self.socket_path}", "token": issued.token}
        write_file_atomic(credentials / "owner.json", json.dumps(connection).encode() + b"\n")

    def status(self) -> dict[str, Any]:
        config = self.api.config
        listeners: list[dict[str, Any]] = [{"kind": "owner",
                                            "address": f"unix:{self.socket_path}"}]
        if self._shared_path is not None:
            listeners.append({"kind": "shared", "address": f"unix:{self._shared_path}"})
        if self._tls_address is not None:
            listeners.append({"kind": "tls", "address": self._tls_address})
        if self._loop is not None:  # the listeners in the order the loop serves them
            for listener, load in zip(listeners, self._loop.load(), strict=False):
                listener["connections"] = load
        return {
            "running": True, "pid": os.getpid(), "address": f"unix:{self.socket_path}",
            "memory_root": str(self.store.root), "memory_enabled": config.memory_enabled,
            "isolation_enabled": config.isolation_enabled, "listeners": listeners,
            "version": __version__, "history_caught_up": self._history_caught_up.is_set(),
            "search_process_pid": self.searches.pid, "log": _log(self.home),
        }

    def _listen(self, path: Path, *, owner: bool) -> Listener:
        """Bind one Unix-socket listener, replacing only a stale socket file at `path`
        (one nobody answers on: a crashed Hub's; a live one may serve another home)."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                if _answers(path):
                    raise InvalidArgument(
                        f"another process is listening on {path} (a Hub of another "
                        "AMUX_HOME?): stop it, or choose another "
                        + ("AMUX_HOME" if owner else "listeners.shared_socket"))
                path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            # The owner socket is private; the shared one is reachable by every local user,
            # who must still present a token (reachability is not authorization).
            os.chmod(path, 0o600 if owner else 0o666)
            sock.listen(BACKLOG)
        except BaseException:
            sock.close()
            raise
        return Listener(sock, owner=owner)

    def _listen_tls(self, address: str, cert: str | None, key: str | None) -> Listener:
        """The TCP listener for remote Runtimes: TLS only, token-authenticated, no admin."""
        import ssl

        if not (cert and key):
            raise InvalidArgument("listeners.tls_address needs listeners.tls_cert and "
                                  "listeners.tls_key")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        host, _, port = address.rpartition(":")
        sock = socket.create_server((host, int(port)), backlog=BACKLOG)
        self._tls_address = f"https://{host}:{sock.getsockname()[1]}"
        return Listener(sock, owner=False, tls=context)

    def serve(self) -> None:
        """Serve until SIGTERM/SIGINT; SIGHUP re-reads config. Cleans up however it ends."""
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        run = self.pid_path.parent
        sockdir.ensure(run, sockdir.PRIVATE, "choose another AMUX_HOME")
        if self.socket_path.parent != run:
            sockdir.ensure(self.socket_path.parent, sockdir.PRIVATE,
                           "set TMPDIR to a directory of your own, or use a shorter "
                           "AMUX_HOME (<AMUX_HOME>/run/hub.sock is too long for a socket)")
        listeners: list[Listener] = []
        bound: list[Path] = []  # only these socket files are ours to remove at the end
        try:
            listeners.append(self._listen(self.socket_path, owner=True))
            bound.append(self.socket_path)
            config = self.api.config
            if config.shared_socket:
                shared = Path(config.shared_socket)
                blocked = sockdir.ensure(
                    shared.parent, sockdir.SHARED,
                    "choose another: amux system config set listeners.shared_socket "
                    "PATH, then restart the Hub")
                listeners.append(self._listen(shared, owner=False))
                bound.append(shared)
                self._shared_path = shared
                if blocked is not None:
                    log.warning("the shared socket %s is not reachable by other users: %s is "
                                "not traversable", shared, blocked)
            if config.tls_address:
                listeners.append(self._listen_tls(config.tls_address, config.tls_cert,
                                                  config.tls_key))
            self._write_pid()
            self._loop = EventLoop(self.api.handle, listeners, preflight=self.api.preflight,
                                   max_connections=connection_cap(len(listeners)))
            previous = {sig: signal.signal(sig, self._on_signal)
                        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
            threading.Thread(target=self._catch_up_history, name="amux-history-catch-up",
                             daemon=True).start()
            try:
                print(json.dumps(self.status()), flush=True)  # the readiness line
                _silence_stdout()  # a starter may close its end of stdout once it read the line
                self._loop.run(tick=self._tick)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        finally:
            for listener in listeners:
                listener.sock.close()
            for path in (*bound, self.pid_path):
                path.unlink(missing_ok=True)
            self.searches.close()
            self.history.close()
            self.store.close()

    def _catch_up_history(self) -> None:
        """What changed in the memory root while the Hub was stopped (or before it was
        killed) goes into history as hand edits, while the Hub already serves."""
        try:
            recorded = self.store.catch_up_history()
        except Exception:  # history must never stop the Hub; say it in the log
            log.exception("memory history could not catch up with the memory root")
            return
        finally:
            self._history_caught_up.set()
        if recorded:
            log.info("memory history: %d change(s) made outside the Hub recorded as hand "
                     "edits", recorded)

    def _write_pid(self) -> None:
        """`run/hub.pid` (pid and start time), best effort: `amux hub stop` asks the Hub
        itself for its pid and reads the file only when the Hub no longer answers, so a
        full disk costs that fallback, not the reads the Hub can still serve."""
        try:
            write_file_atomic(self.pid_path, pidfile.current().render().encode())
        except OSError as error:
            fault = storage_error(error, self.pid_path, "the Hub serves without its pid file")
            if fault is None:
                raise
            log.warning("%s", fault.message)

    def _tick(self) -> None:
        """Every pass of the loop: a reload asked for by SIGHUP, and whether amux is still
        installed (`_installed`)."""
        if self._reload.is_set():
            self._reload.clear()
            self._reload_config()
        now = time.monotonic()
        if now >= self._next_install_check:
            self._next_install_check = now + INSTALL_CHECK_SECONDS
            self._check_installed()

    def _check_installed(self) -> None:
        """A Hub whose amux was uninstalled (its code gone from disk at two checks in a
        row: an upgrade's brief gap is not one) stops, so nothing of a removed amux keeps
        running; a new install starts its own Hub on demand."""
        code = Path(amux.__file__)
        if code.exists():
            self._code_missing = False
            return
        if not self._code_missing:
            self._code_missing = True
            return
        log.warning("amux was uninstalled (%s is gone): the Hub stops", code)
        if self._loop is not None:
            self._loop.stop()

    def _reload_config(self) -> None:
        try:
            self.api.reload()
            log.info("configuration reloaded")
        except AmuxError as error:
            log.error("configuration not reloaded: %s", error.message)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._loop is None:
            return
        if signum == signal.SIGHUP:
            self._reload.set()
            self._loop.wake()
        else:
            self._loop.stop()


def _log(home: Path) -> str | None:
    """Where this Hub's messages go: `run/hub.log` when its stderr is that file (a Hub
    started in the background), None when it is something else (`amux hub serve` in a
    terminal)."""
    path = log_path(home)
    try:
        ours, there = os.fstat(2), os.stat(path)
    except OSError:
        return None
    return str(path) if (ours.st_dev, ours.st_ino) == (there.st_dev, there.st_ino) else None


def _answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _report_tidy(store: Store) -> None:
    """Say in the log what opening the store changed, or could not change."""
    tidied = store.tidied
    if tidied.fixed_modes:
        log.info("made %d hand-added files or folders under %s private again (0600/0700)",
                 tidied.fixed_modes, store.root)
    if tidied.unfixable:
        log.warning("%d entries under %s are open to other users or stale temps, and the file "
                    "system refused to change them (read-only?)", tidied.unfixable, store.root)


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _default_owner() -> str:
    """The owner principal is named after the Hub's Unix user (made a valid id)."""
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in getpass.getuser().lower())
    return name.lstrip("._-")[:64] or "owner"


INSTALL_CHECK_SECONDS = 30.0
"""How often the Hub looks whether amux is still installed (`Hub._check_installed`)."""


def main(argv: list[str] | None = None) -> int:
    """`python -m amux.hub.server HOME [--detach]`: serve HOME (`amux hub serve` runs it
    in the foreground; `amux hub start` with `--detach`).

    A start-up failure is one line, `amux hub: …`, and the error's exit code (a full
    or read-only disk: 8, `storage_unavailable`); detached, the starter also gets the
    error's JSON as the readiness line. Only a bug gives a traceback.
    """
    args = sys.argv[1:] if argv is None else argv
    detach = DETACH in args
    args = [arg for arg in args if arg != DETACH]
    if len(args) != 1:
        print(f"usage: python -m amux.hub.server AMUX_HOME [{DETACH}]", file=sys.stderr)
        return 2
    home = Path(args[0])
    if detach:
        daemon.detach()
    logging.basicConfig(level=logging.INFO, format="amux hub: %(message)s")
    try:
        try:
            Hub(home).serve()
        except OSError as error:
            fault = storage_error(error, error.filename or home, "the Hub cannot start")
            if fault is None:
                raise
            raise fault from None
    except AmuxError as error:
        return daemon.failed("amux hub", error, detach)
    return 0


if __name__ == "__main__":
    sys.exit(main())
