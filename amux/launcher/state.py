"""Session start state: what a launch froze, under `<AMUX_HOME>/sessions/<id>/`.

`state.json` (0600, written temp-and-replace) holds the binding, the full frozen
protocol and merged instruction text, the adapter and the agent's version, the
memory channel, the native-memory suppression applied, the agent's own session
reference once known, whether the session can be resumed at all, and why it has no
memory when it has none. A resume
reads it back and reuses it byte for byte; it is never rewritten except to record
the agent's session reference. The directory also holds agent files the session
owns (Pi's session file and the instructions file it is given). No secrets here:
tokens live only in the run directory's connection config and die with the run, and an
endpoint's URL is kept without its user and password (`frozen_endpoint`).

`version` is the shape of the file: a field added or changed makes a new version, and
`MIGRATIONS` brings a state of every older version to the current one when it is read
(the file itself is rewritten only when the session is saved again); a newer version, or
one that cannot be migrated, is refused saying why and what to do.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from amux.adapters.base import without_userinfo
from amux.errors import AmuxError, InvalidArgument
from amux.launcher.writes import Write
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STATE_VERSION = 2


class SessionState(NamedTuple):
    id: str
    agent: str
    """The command the user named (`claude`, `/opt/bin/codex`, …)."""
    adapter: str
    adapter_version: str | None
    channel: str
    binding: str | None
    principal: str | None
    protocol_version: str | None
    protocol: str | None
    instructions: str | None
    suppression: dict[str, Any]
    agent_session: str | None
    created_at: float
    cwd: str
    warnings: tuple[str, ...] = ()
    as_user: str | None = None
    """The Unix user an isolated session runs as (None: the launching user)."""
    version: int = STATE_VERSION
    resumable: bool = True
    """False for a session the agent keeps nothing of (Pi's `--no-session`)."""
    not_resumable_reason: str | None = None
    """Why `resumable` is false, said by `amux run --resume`."""
    endpoint: dict[str, str | bool | None] | None = None
    """`amux run --endpoint`: url (without a user and password), model, api, key_env (the
    variable's name, never the key), `credentials: true` when the URL had a user and
    password (`frozen_endpoint`); reused on resume; None: the agent's own configured model."""
    no_memory_reason: str | None = None
    """Why the session has no memory (`--no-memory`, a setting, what discovery found, an
    agent without a memory capability); None when it has memory."""

    def summary(self) -> dict[str, Any]:
        """The state without its long texts (protocol, instructions): `amux sessions list`."""
        data = self._asdict()
        for key in ("protocol", "instructions"):
            data.pop(key)
        return data


def sessions_dir(home: Path) -> Path:
    return home / "sessions"


def new_session_id(clock: float | None = None) -> str:
    """Sortable by start time, unique: `20261130-054501-3fa9c2`."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if clock is None else clock))
    return f"{stamp}-{os.urandom(3).hex()}"


def session_dir(home: Path, session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise InvalidArgument(f"not an amux session id: {session_id!r}")
    return sessions_dir(home) / session_id


def saved(home: Path, session_id: str) -> bool:
    """Whether `session_id` (any text: an agent's own session id too) names a saved
    session."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return False
    return os.path.lexists(session_dir(home, session_id) / "state.json")


def writes(home: Path, session_id: str) -> tuple[Write, ...]:
    """What `save` creates, in order."""
    directory = session_dir(home, session_id)
    return (Write(sessions_dir(home), "dir", 0o700),
            Write(directory, "dir", 0o700, content="the session's own directory"),
            Write(directory / "state.json", "file", 0o600,
                  content="the session's frozen state (no secret)"))


def save(home: Path, state: SessionState) -> Path:
    *directories, file = writes(home, state.id)
    for directory in directories:
        directory.make_dir(exist_ok=True)
    data = json.dumps(state._asdict(), ensure_ascii=False, indent=1, sort_keys=True)
    file.write(data.encode("utf-8") + b"\n")
    return file.path


def load(home: Path, session_id: str) -> SessionState:
    path = session_dir(home, session_id) / "state.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgument(f"no amux session {session_id!r} "
                              f"(see `amux sessions list`)") from None
    except OSError as exc:
        raise _unreadable(path, f"cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8, or not JSON
        raise _unreadable(path, f"not JSON: {exc}") from None
    except RecursionError:
        raise _unreadable(path, "nested too deeply") from None
    if not isinstance(data, dict):
        raise _unreadable(path, "not a JSON object")
    data = _migrated(path, data)
    problem = _problem(data, session_id)
    if problem is not None:
        raise _unreadable(path, problem)
    data["warnings"] = tuple(data.get("warnings", ()))
    if data.get("endpoint") is not None:
        data["endpoint"] = frozen_endpoint(data["endpoint"])
    return SessionState(**data)


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (amux 0.1.0 before `no_memory_reason`): a session without a binding has
    the reason its start warned of first (discovery's, or the agent's lack of a memory
    capability), else one saying it was not recorded."""
    reason = None
    if data.get("binding") is None:
        warnings = data.get("warnings")
        first = warnings[0] if isinstance(warnings, list) and warnings else None
        reason = first if isinstance(first, str) else "not recorded by the amux that started it"
    return {**data, "version": 2, "no_memory_reason": reason}


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_version_1}
"""Each older state version → what makes a state of it the next version's."""


def _migrated(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`data` brought to `STATE_VERSION`; refused, saying why and what to do, when it is
    newer or cannot be migrated."""
    version = data.get("version")
    if type(version) is not int:
        raise _unreadable(path, f"its state version is {version!r}, not a number")
    if version > STATE_VERSION:
        from amux import __version__

        raise InvalidArgument(
            f"{path} was saved by a newer amux (state version {version}; amux {__version__} "
            f"reads versions up to {STATE_VERSION}): resume it with that amux (upgrade this "
            "one: `pipx upgrade amux`, or `git pull` and install the checkout again), or "
            "start a new session")
    while version < STATE_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise _unreadable(path, f"state version {version} is older than any this amux "
                              f"migrates ({min(MIGRATIONS)} to {STATE_VERSION})")
        data = step(data)
        version = data["version"]
    return data


def frozen_endpoint(endpoint: Mapping[str, str | bool | None]) -> dict[str, str | bool | None]:
    """An endpoint (`EndpointRequest._asdict()`) as a session freezes it: its URL without
    a user and password, and `credentials: true` when it had them (only the agent's
    environment holds them; a resume is given them again). A state saved whole before
    this is read so too."""
    url = str(endpoint["url"])
    shown = without_userinfo(url)
    return dict(endpoint) if shown == url else {**endpoint, "url": shown, "credentials": True}


_NONE = type(None)
_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "agent": (str,), "adapter": (str,), "adapter_version": (str, _NONE),
    "channel": (str,), "binding": (str, _NONE), "principal": (str, _NONE),
    "protocol_version": (str, _NONE), "protocol": (str, _NONE), "instructions": (str, _NONE),
    "suppression": (dict,), "agent_session": (str, _NONE), "created_at": (int, float),
    "cwd": (str,), "warnings": (list,), "as_user": (str, _NONE), "version": (int,),
    "resumable": (bool,), "not_resumable_reason": (str, _NONE), "endpoint": (dict, _NONE),
    "no_memory_reason": (str, _NONE)}
"""What each `SessionState` field is in `state.json`, as json reads it back (exact types:
a boolean is no number)."""


def _problem(data: dict[str, Any], session_id: str) -> str | None:
    """Why `data` is not a `SessionState` that `save` wrote; None when it is one."""
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        return f"unknown key {unknown[0]!r}"
    missing = [name for name in SessionState._fields
               if name not in data and name not in SessionState._field_defaults]
    if missing:
        return f"no {missing[0]!r}"
    for name, value in data.items():
        if type(value) not in _TYPES[name] or not _holds(name, value):
            return f"{name!r} has the wrong type"
    if data["id"] != session_id:
        return f"its id {data['id']!r} is not its directory's name"
    return None


def _holds(name: str, value: Any) -> bool:
    """Whether a field of the right type holds what `save` writes there."""
    if name == "created_at":
        try:
            time.gmtime(value)  # what `amux sessions` shows it as
        except (OverflowError, OSError, ValueError):  # NaN, infinite, or no date
            return False
    if name == "warnings":
        return all(type(item) is str for item in value)
    if name == "endpoint" and value is not None:
        return (all(type(item) in ((bool,) if key == "credentials" else (str, _NONE))
                    for key, item in value.items())
                and type(value.get("url")) is str and type(value.get("model")) is str)
    return True


def _unreadable(path: Path, why: str) -> AmuxError:
    return InvalidArgument(f"{path} is not a session state amux can read "
                           f"({why}), so it cannot be resumed: start a new session instead, "
                           f"and remove this one: rm -r {shlex.quote(str(path.parent))}")


def listing(home: Path, warn: Callable[[str], None]) -> list[SessionState]:
    """Every session (a directory with a `state.json`), oldest first. One that cannot be
    read is skipped and named to `warn` (the command's own warning line): it must not
    hide the others, nor make `amux sessions list` or `--resume last` fail."""
    found = []
    root = sessions_dir(home)
    for name in sorted(os.listdir(root)) if root.is_dir() else []:
        if not os.path.lexists(root / name / "state.json"):
            continue  # not a session, or one still being started
        try:
            found.append(load(home, name))
        except AmuxError as error:
            warn(f"skipped session {name}: {error.message}")
    return sorted(found, key=lambda session: session.created_at)  # ids tie within a second
