"""Run directories: where one agent run's connection to the Hub lives, plain or isolated.

A run directory holds the agent's connection config (SPEC Appendix A, 0600: the Hub,
a delegated token bound to the session's binding, the Hub's uid) and `bin/amux`, and
records its launcher so a dead launcher's leftovers are cleaned up:

    plain:     <AMUX_HOME>/run/agents/<session id>/     the launcher's, 0700
                 launcher.pid, token.json, memory.json, bin/amux -> the installed client
    isolated:  <runs root>/<session id>/                root-owned 0711; launcher.pid, token.json
                 agent-config/                          root-owned 0711
                   memory/                              the target's, 0700
                     memory.json, bin/amux              the target's: a copy of the single-file
                                                        standard-library client

The runs root of isolated runs is outside the owner's 0700 home (`AMUX_RUNS_DIR`,
default `/var/lib/amux/runs`), so the target reaches its own directory and nothing
else; its copy of the client runs with the target's `python3` (3.9 or newer) without
access to the amux installation. Both roots are created or verified before use as the
Hub's socket directories are (`amux.sockdir`): reached through no link, owned by the
launching user (root, for isolated runs) and writable by nobody else, nor anything above
them but root, us, or a sticky directory; anything else is refused, naming the fix.
Below a verified root only the launcher can rename or create, so it works there by path;
the target's own `memory` directory is handed over last, when everything in it is done.

`launcher.pid` has the launcher's pid and start time, `token.json` the principal and
token id (no secret), whether the launcher's principal delegated it to itself (`self`:
only that principal may revoke it) and when it expires. "Gone" is judged by pid *and*
start time (`amux.pidfile`): a reused pid or an unreaped zombie does not keep a dead
launcher's token alive.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from amux import pidfile
from amux.errors import AmuxError, InvalidArgument
from amux.launcher.writes import Write
from amux.typing_light import NamedTuple

CONFIG_NAME = "memory.json"
"""The agent's connection config inside its run directory."""
PID_NAME = "launcher.pid"
TOKEN_NAME = "token.json"
DEFAULT_RUNS_ROOT = "/var/lib/amux/runs"


class RunDir(NamedTuple):
    """One run directory's layout; nothing exists until `make`."""

    path: Path
    """The run directory itself (`launcher.pid`, `token.json`), removed at cleanup."""
    memory: Path
    """The directory the agent reads: its connection config and `bin/amux`."""
    owner: tuple[int, int] | None = None
    """(uid, gid) of an isolated run's target, who owns `memory` and what it holds."""

    @property
    def config(self) -> Path:
        return self.memory / CONFIG_NAME

    @property
    def bin_dir(self) -> Path:
        return self.memory / "bin"


class Token(NamedTuple):
    """The delegated token a run directory gives its agent, and how to revoke it."""

    principal: str
    binding: str
    token: str
    """The secret: written only into the 0600 connection config."""
    token_id: str
    own: bool
    """Delegated by `principal` to itself (`POST /v1/delegate`), else by the Hub's owner."""
    expires_at: object
    hub: str
    """Where the agent reaches the Hub (an isolated run: the shared socket)."""
    hub_uid: int
    ca_file: str | None = None


def plain_root(home: Path) -> Path:
    return home / "run" / "agents"


def runs_root() -> Path:
    """Where isolated runs live: `AMUX_RUNS_DIR`, else /var/lib/amux/runs."""
    return Path(os.environ.get("AMUX_RUNS_DIR") or DEFAULT_RUNS_ROOT)


def plain(home: Path, session_id: str) -> RunDir:
    run_dir = plain_root(home) / session_id
    return RunDir(run_dir, run_dir)


def isolated(session_id: str, owner: tuple[int, int]) -> RunDir:
    run_dir = runs_root() / session_id
    return RunDir(run_dir, run_dir / "agent-config" / "memory", owner)


def writes(run: RunDir) -> tuple[Write, ...]:
    """What `make` creates, in order: the runs root first (made if missing, else verified)."""
    isolated = run.owner is not None
    made = [Write(run.path.parent, "dir", 0o711 if isolated else 0o700,
                  content="the runs root, verified: owned by the launcher, writable by nobody "
                  "else"),
            Write(run.path, "dir", 0o711 if isolated else 0o700,
                  content="this run's directory, removed when the agent exits")]
    if isolated:
        made += [Write(run.memory.parent, "dir", 0o711),
                 Write(run.memory, "dir", 0o700, agents=True)]
    return (*made,
            Write(run.path / PID_NAME, "file", 0o644,
                  content="the launcher's pid and start time"),
            Write(run.path / TOKEN_NAME, "file", 0o644,
                  content="the delegated token's principal and id, no secret: how the next "
                  "launch revokes it if this launcher dies"),
            Write(run.config, "file", 0o600, agents=isolated,
                  content="connection config with a delegated token"),
            Write(run.bin_dir, "dir", 0o700, agents=isolated),
            Write(run.bin_dir / "amux", "copy", 0o700, agents=True,
                  content="a copy of the single-file client") if isolated else
            Write(run.bin_dir / "amux", "link", None, content="a link to the installed amux"))


def make(run: RunDir, token: Token, client: Path, cache_dir: Path) -> None:
    """Write `run` for `token` as `writes` lists it: claim, connection config, and
    `bin/amux` (a link to the installed `client`, or for an isolated run a copy its target
    can run, from the one built in the launcher's `cache_dir`). Whatever was there before
    (a run directory of the same session id) is replaced."""
    root, *made = writes(run)
    verified(root.path, isolated=run.owner is not None)
    remove(run.path)
    data = {**claim(token), CONFIG_NAME: config(token)}
    for entry in made:
        if entry.kind == "dir":
            entry.make_dir()
        elif entry.kind == "file":
            entry.write(data[entry.path.name])
        elif entry.kind == "link":
            entry.path.symlink_to(client)
        else:
            from amux.client.bundle import copy_client  # zipfile: only isolated runs need it

            copy_client(entry.path, cache_dir).chmod(entry.bits)
    if run.owner is not None:
        # Inner first: until `memory` is the target's, nothing in it can be touched by them.
        for entry in reversed(made):
            if entry.agents:
                os.chown(entry.path, *run.owner, follow_symlinks=False)


REMOVE_DEPTH = 64
"""How deep below a run directory its removal goes (the agent's own files included)."""
_WALK = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def remove(run_dir: Path) -> bool:
    """Remove `run_dir`; whether it is gone (else it stays for a later launch).

    An isolated run's `memory` is the target's, who may still be changing it: every
    directory is opened by name in its parent's descriptor with `O_DIRECTORY |
    O_NOFOLLOW` (a link, or a FIFO swapped in for a directory, is never opened: the
    open fails instead of following or blocking, as `shutil.rmtree`'s would), anything
    else is unlinked without being opened, and a tree deeper than `REMOVE_DEPTH`, or
    one that keeps growing, is left with a False."""
    try:
        parent = os.open(run_dir.parent, _WALK)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        _remove_at(parent, run_dir.name, 0)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    finally:
        os.close(parent)
    return True


def _remove_at(parent: int, name: str, depth: int) -> None:
    try:
        os.unlink(name, dir_fd=parent)  # a file, a link, a FIFO: never opened
        return
    except IsADirectoryError:
        pass
    if depth >= REMOVE_DEPTH:
        raise OSError(f"{name}: nested more than {REMOVE_DEPTH} levels")
    fd = os.open(name, _WALK, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            try:
                _remove_at(fd, entry, depth + 1)
            except FileNotFoundError:
                continue
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)  # ENOTEMPTY if it was added to meanwhile: left


def verified(root: Path, *, isolated: bool) -> None:
    """Create or verify a runs root (module docstring); `invalid_argument` naming what is
    wrong and the fix. An isolated runs root must be traversable by the target users."""
    from amux import sockdir

    if isolated:
        elsewhere = ("set AMUX_RUNS_DIR to a directory of root's that other users can "
                     f"traverse (default {DEFAULT_RUNS_ROOT})")
    else:
        elsewhere = "choose another AMUX_HOME"
    try:
        blocked = sockdir.ensure(root, 0o711 if isolated else 0o700, elsewhere, sockdir.RUNS)
    except InvalidArgument as unsafe:
        raise InvalidArgument(str(unsafe)) from None
    except OSError as exc:
        raise InvalidArgument(f"cannot use the runs directory {root}: {exc}; "
                              f"{elsewhere}") from None
    if isolated and blocked is not None:
        raise InvalidArgument(f"the runs directory {root} is not reachable by "
                              f"other users: {blocked} is not traversable ({elsewhere})")


def trusted(root: Path, *, isolated: bool) -> bool:
    """Whether an existing runs root passes `verified` (one that fails is not ours to
    clean up: whoever controls it could have planted what is there)."""
    if not root.is_dir():
        return False
    try:
        verified(root, isolated=isolated)
    except AmuxError:
        return False
    return True


def claim(token: Token) -> dict[str, bytes]:
    """The records of this launcher (pid and start time) and of the token to revoke once
    it is gone, by file name."""
    record: dict[str, object] = {"principal": token.principal, "token_id": token.token_id}
    if token.own:
        record.update({"self": True, "expires_at": token.expires_at})
    return {PID_NAME: pidfile.current().render().encode(),
            TOKEN_NAME: json.dumps(record).encode() + b"\n"}


def config(token: Token) -> bytes:
    """The agent's connection config (SPEC Appendix A), written 0600.

    `hub_uid`, for a Unix socket, is the uid the agent's client requires of whoever
    listens there before it sends the token (`amux.client.connection`).
    """
    fields: dict[str, str | int] = {"version": 1, "hub": token.hub, "token": token.token,
                                    "binding": token.binding}
    if token.hub.startswith("unix:"):
        fields["hub_uid"] = token.hub_uid
    if token.ca_file:
        fields["ca_file"] = token.ca_file
    return json.dumps(fields).encode() + b"\n"


def stale(root: Path) -> list[tuple[Path, dict[str, object] | None]]:
    """Run directories under `root` whose launcher is gone, each with its token record."""
    found: list[tuple[Path, dict[str, object] | None]] = []
    for run_dir in sorted(root.iterdir()) if root.is_dir() else []:
        if _launcher_alive(run_dir):
            continue
        try:
            token = json.loads((run_dir / TOKEN_NAME).read_text())
        except (OSError, ValueError):
            token = None
        found.append((run_dir, token if isinstance(token, dict) else None))
    return found


def running(home: Path, session_id: str) -> bool:
    """Whether the launcher of `session_id` still runs, as its run directory records (in
    this home's runs root or the isolated one; a root that is not ours says nothing)."""
    return any(_launcher_alive(root / session_id)
               for root, isolated in ((plain_root(home), False), (runs_root(), True))
               if trusted(root, isolated=isolated))


def _launcher_alive(run_dir: Path) -> bool:
    launcher = pidfile.read(run_dir / PID_NAME)
    return launcher is not None and pidfile.alive(launcher)
