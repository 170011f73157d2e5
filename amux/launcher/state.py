"""Session start state: what a launch froze, under `<AMUX_HOME>/sessions/<id>/`.

`state.json` (0600, written temp-and-replace) holds the binding, the full frozen
protocol and merged instruction text, the adapter and the agent's version, the
memory channel, the native-memory suppression applied, the agent's own session
reference once known, and whether the session can be resumed at all. A resume
reads it back and reuses it byte for byte; it is never rewritten except to record
the agent's session reference. The directory also holds agent files the session
owns (Pi's session file and the instructions file it is given). No secrets here:
tokens live only in the run directory's connection config and die with the run, and an
endpoint's URL is kept without its user and password (`frozen_endpoint`).
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

STATE_VERSION = 1


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
    if data.get("version") != STATE_VERSION:
        raise InvalidArgument(f"{path} has state version "
                              f"{data.get('version')!r}; this amux reads {STATE_VERSION}")
    problem = _problem(data, session_id)
    if problem is not None:
        raise _unreadable(path, problem)
    data["warnings"] = tuple(data.get("warnings", ()))
    if data.get("endpoint") is not None:
        data["endpoint"] = frozen_endpoint(data["endpoint"])
    return SessionState(**data)


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
    "resumable": (bool,), "not_resumable_reason": (str, _NONE), "endpoint": (dict, _NONE)}
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
                           f"({why}); remove that session: rm -r {shlex.quote(str(path.parent))}")


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
