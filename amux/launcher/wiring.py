"""Wiring a session to memory: resolve the binding once, delegate a token, clean up.

A new execution asks the Hub once, with a bounded timeout, which binding the
caller's principal has now (`POST /v1/binding`); a resume reuses the frozen one.
Either way the agent gets a delegated token carrying exactly that binding (the
Hub refuses it on every call once the binding no longer matches), in a
connection config (0600) inside the run directory, never in the environment.
Only the owner may delegate; another principal's connection is passed on with
its binding declared (`binding` in the config: the Hub checks it per call).

Anything that goes wrong here is a start-up warning and a session without
memory: never a blocked agent, never the global scope instead, never a
temporary store. The run directory and the token go at cleanup, however the
agent ended; run directories of launchers that died are removed at the next
launch.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from amux.client.connection import Connection, find_connection
from amux.client.transport import HubClient
from amux.client.wire import ClientError
from amux.memory.durable import write_file_atomic

DISCOVERY_TIMEOUT_SECONDS = 3.0
TOKEN_TTL_SECONDS = 7 * 86400
"""A backstop only: the token is revoked when the agent exits; a resume gets a new one."""


class NoMemory(Exception):
    """Memory cannot be wired for this launch; the message is the start-up warning."""


@dataclass(frozen=True)
class Binding:
    principal: str
    binding: str


@dataclass(frozen=True)
class Wired:
    """A run directory with the connection config and `bin/amux` for one agent run."""

    run_dir: Path
    config_path: Path
    bin_dir: Path
    principal: str
    token_id: str | None
    """The delegated token to revoke at cleanup (None: the caller's own connection)."""
    connection: Connection
    """How the launcher itself reaches the Hub (for the revocation)."""


def runs_dir(home: Path) -> Path:
    return home / "run" / "agents"


def _connection(home: Path, start_hub: bool) -> Connection:
    """The launcher's own connection; the local default Hub is started on demand."""
    explicit = os.environ.get("AMUX_MEMORY_CONFIG") or os.environ.get("AMUX_HUB")
    if not explicit and start_hub:
        from amux.hub import control

        if not control.answering(home):
            control.start(home)
    return find_connection()


def resolve(home: Path, *, start_hub: bool = True,
            timeout: float = DISCOVERY_TIMEOUT_SECONDS) -> Binding:
    """The caller's binding now; `NoMemory` with the reason when there is none."""
    try:
        connection = _connection(home, start_hub)
        with HubClient(connection, timeout=timeout) as client:
            answer = client.call("/v1/binding", {})
    except ClientError as error:
        raise NoMemory(_reason(error)) from None
    return Binding(str(answer["principal"]), str(answer["binding"]))


def _reason(error: ClientError) -> str:
    if error.code == "memory_disabled":
        return ("memory is off on the Hub (memory.enabled = false): this session runs "
                "without amux memory, with the agent's own memory policy")
    return f"amux memory is not available ({error.code}: {error.message}); this session " \
           "runs without it"


def installed_client() -> Path:
    """The installed `amux` (next to this interpreter); its absence is a start-up failure."""
    beside = Path(sys.executable).parent / "amux"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("amux")
    if found:
        return Path(found)
    raise ClientError("internal", f"the amux client is not installed: no `amux` next to "
                      f"{sys.executable} nor on PATH; reinstall amux")


def wire(home: Path, session_id: str, binding: Binding, client: Path) -> Wired:
    """Delegate a token for `binding` and write the run directory for one agent run."""
    try:
        connection = _connection(home, start_hub=True)
        clean_stale_runs(home, connection)
        with HubClient(connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            try:
                issued = hub.call("/v1/admin/principals", {
                    "action": "delegate", "name": binding.principal,
                    "binding": binding.binding, "ttl": TOKEN_TTL_SECONDS})
                token, token_id = str(issued["token"]), str(issued["token_id"])
            except ClientError as error:
                if error.code != "forbidden" or not connection.token:
                    raise
                token, token_id = connection.token, None  # not the owner: declare instead
    except ClientError as error:
        raise NoMemory(_reason(error)) from None
    run_dir = runs_dir(home) / session_id
    runs_dir(home).mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(mode=0o700)
    (run_dir / "launcher.pid").write_text(f"{os.getpid()}\n")
    if token_id is not None:  # no secret: what to revoke if this launcher dies
        (run_dir / "token.json").write_text(json.dumps(
            {"principal": binding.principal, "token_id": token_id}) + "\n")
    config = {"version": 1, "hub": connection.hub, "token": token, "binding": binding.binding}
    if connection.ca_file:
        config["ca_file"] = connection.ca_file
    config_path = run_dir / "memory.json"
    write_file_atomic(config_path, json.dumps(config).encode() + b"\n")  # 0600
    bin_dir = run_dir / "bin"
    bin_dir.mkdir(mode=0o700)
    (bin_dir / "amux").symlink_to(client)
    return Wired(run_dir, config_path, bin_dir, binding.principal, token_id, connection)


def check(wired: Wired) -> str | None:
    """One call with the agent's own credential: the reason its memory calls will fail."""
    try:
        from amux.client.connection import read_config

        agent = read_config(wired.config_path, "run", None)
        with HubClient(agent, timeout=DISCOVERY_TIMEOUT_SECONDS) as client:
            client.call("/v1/binding", {})
    except ClientError as error:
        return (f"memory calls of this session will fail until this is fixed: {error.code}: "
                f"{error.message}")
    return None


def unwire(wired: Wired) -> None:
    """Revoke the delegated token and remove the run directory (best effort, never raises)."""
    if wired.token_id is not None:
        _revoke(wired.connection, wired.principal, wired.token_id)
    shutil.rmtree(wired.run_dir, ignore_errors=True)


def _revoke(connection: Connection, principal: str, token_id: str) -> None:
    with contextlib.suppress(ClientError), HubClient(
            connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
        hub.call("/v1/admin/principals", {"action": "revoke", "name": principal,
                                          "token_id": token_id})


def clean_stale_runs(home: Path, connection: Connection) -> None:
    """Revoke the tokens of, and remove, run directories whose launcher is gone."""
    root = runs_dir(home)
    for run_dir in root.iterdir() if root.is_dir() else []:
        try:
            pid = int((run_dir / "launcher.pid").read_text())
        except (OSError, ValueError):
            pid = 0
        if pid > 0 and _alive(pid):
            continue
        with contextlib.suppress(OSError, ValueError, KeyError):
            token = json.loads((run_dir / "token.json").read_text())
            _revoke(connection, str(token["principal"]), str(token["token_id"]))
        shutil.rmtree(run_dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
