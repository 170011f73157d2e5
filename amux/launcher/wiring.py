"""Wiring a session to memory: resolve the binding once, delegate a token, clean up.

A new execution asks the Hub once, with a bounded timeout, which binding the
caller's principal has now (`POST /v1/binding`); a resume reuses the frozen one.
Either way the agent gets its own delegated token carrying exactly that binding,
which the launcher mints from its own login token (`POST /v1/delegate`, any
principal, any listener: the owner's local default, `AMUX_HUB` + `AMUX_TOKEN`,
`AMUX_MEMORY_CONFIG`) and revokes when the agent exits (`POST /v1/revoke`). The
Hub refuses it on every call once the binding no longer matches, and refuses to
mint it for a resumed session whose binding no longer matches. It goes in a
connection config (0600) inside the run directory, never in the environment:
`LAUNCHER_PATCH` removes the launcher's own connection (`AMUX_TOKEN`, `AMUX_HUB`,
`AMUX_MEMORY_CONFIG`, `AMUX_MEMORY_BINDING`) from every agent's environment.
An isolated run's binding is the Hub's read-only answer for that principal
(`resolve_for`), and its token the owner's to mint for it (`grant_for`, the
owner-only `principal delegate`); the run directory is `rundirs`'.

Anything that goes wrong here is a start-up warning and a session without
memory: never a blocked agent, never the global scope instead, never a
temporary store, never the launcher's own token instead. The run directory and
the token go at cleanup, however the agent ended; run directories of launchers
that died are revoked and removed at the next launch. A token the Hub does not
revoke (it is down, or cannot save) keeps its run directory, with a warning, so
that a later launch revokes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from amux.client.connection import Connection, find_connection
from amux.client.transport import HubClient
from amux.envpatch import EnvPatch
from amux.errors import AmuxError, InternalError, MemoryDisabled
from amux.launcher import rundirs
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DISCOVERY_TIMEOUT_SECONDS = 3.0
TOKEN_TTL_SECONDS = 7 * 86400
"""A backstop only: the token is revoked when the agent exits; a resume gets a new one.
The longest a Hub grants a self-delegated token (`SELF_DELEGATE_TTL_MAX`)."""
LAUNCHER_CONNECTION = ("AMUX_TOKEN", "AMUX_HUB", "AMUX_MEMORY_CONFIG", "AMUX_MEMORY_BINDING")
"""How the launcher itself reaches the Hub: never passed on to an agent."""
LAUNCHER_PATCH = EnvPatch(unset=LAUNCHER_CONNECTION)
"""What a non-isolated agent's environment starts from: ours without our own connection to
the Hub (the agent reaches memory only through its run directory's config)."""


class NoMemory(Exception):
    """Memory cannot be wired for this launch; the message is the start-up warning."""


class Binding(NamedTuple):
    principal: str
    binding: str


class Issued(NamedTuple):
    """A delegated token for one agent run, with the launcher's own connection, through
    which it is revoked at cleanup."""

    token: rundirs.Token
    connection: Connection


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
    except AmuxError as error:
        raise NoMemory(_reason(error)) from None
    return Binding(str(answer["principal"]), str(answer["binding"]))


def resolve_for(home: Path, name: str, *, start_hub: bool = True) -> Binding:
    """The binding principal `name` (an isolated run's Unix user) has now, as the Hub
    says, read-only (`principals` action `binding`): nothing is issued. `NoMemory` when
    a run as that user would have none (memory off, no shared socket, no principal)."""
    try:
        connection = _connection(home, start_hub)
        with HubClient(connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            status = hub.call("/v1/status", {})
            if not status.get("memory_enabled"):
                raise NoMemory(_reason(MemoryDisabled("")))
            _shared_socket(status)
            answer = hub.call("/v1/admin/principals", {"action": "binding", "name": name})
    except AmuxError as error:
        if error.code == "invalid_argument" and "principal" in error.message:
            raise NoMemory(f"no amux principal for Unix user {name!r} ({error.message}); add "
                           f"one with `amux principal add {name}`; this session runs without "
                           "amux memory") from None
        raise NoMemory(_reason(error)) from None
    return Binding(str(answer["principal"]), str(answer["binding"]))


def _shared_socket(status: Mapping[str, Any]) -> str:
    """The Hub's shared socket from its `/v1/status`; `NoMemory` when it has none."""
    shared = next((entry["address"] for entry in status.get("listeners", [])
                   if entry.get("kind") == "shared"), None)
    if shared is None:
        raise NoMemory(
            "the Hub has no shared socket, so a run as another user cannot reach it: "
            "`amux system config set listeners.shared_socket /run/amux/hub.sock`, "
            "then restart the Hub; this session runs without amux memory")
    return str(shared)


def _reason(error: AmuxError) -> str:
    if error.code == "memory_disabled":
        return ("memory is off on the Hub (memory.enabled = false): this session runs "
                "without amux memory, with the agent's own memory policy; the Hub's owner "
                "turns it on with `amux system config set memory.enabled true`")
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
    raise InternalError(f"the amux client is not installed: no `amux` next to "
                        f"{sys.executable} nor on PATH; reinstall amux")


def delegate(home: Path, binding: Binding, launched: Mapping[str, str]) -> Issued:
    """A token the launcher's own principal delegates to itself for `binding`.

    The frozen binding is the one expected: a resumed session whose scope changed gets
    `binding_mismatch`, a launcher holding a delegated token `forbidden`, memory off
    `memory_disabled`; each is `NoMemory`, never the launcher's own token instead.
    Run directories of dead launchers of this principal are cleaned up first.
    """
    try:
        connection = _connection(home, start_hub=True)
        with HubClient(connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            issued = hub.call("/v1/delegate", {**launched, "binding": binding.binding,
                                               "ttl": TOKEN_TTL_SECONDS})
    except AmuxError as error:
        raise NoMemory(_not_delegated(error)) from None
    token = rundirs.Token(str(issued["principal"]), binding.binding, str(issued["token"]),
                          str(issued["token_id"]), own=True,
                          expires_at=issued.get("expires_at"), hub=connection.hub,
                          hub_uid=connection.hub_uid, ca_file=connection.ca_file)
    clean_stale_runs(home, connection, token.principal)
    return Issued(token, connection)


class HubInstance(NamedTuple):
    pid: int
    version: str


def hub_instance(issued: Issued) -> HubInstance | None:
    """The Hub that issued `issued` as it answers now (its pid and amux version), None when
    none answers: a launch compares it before and after its agent ran (a Hub that stopped
    or restarted meanwhile failed the agent's memory calls). Never starts a Hub."""
    try:
        with HubClient(issued.connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            status = hub.call("/v1/status", {})
        return HubInstance(int(status["pid"]), str(status.get("version")))
    except (AmuxError, KeyError, TypeError, ValueError):
        return None


def _not_delegated(error: AmuxError) -> str:
    if error.code == "forbidden":
        return (f"the launcher's own token cannot mint the agent's ({error.message}): "
                "launch with a login token (the Hub owner's local default, or AMUX_HUB + "
                "AMUX_TOKEN)")
    return f"no delegated token for this session ({error.code}: {error.message})"


def grant_for(home: Path, name: str, binding: str,
              launched: Mapping[str, str]) -> tuple[Issued, str | None]:
    """A token the Hub's owner delegates to principal `name` (an isolated run's user),
    bound to `binding`, for the Hub's shared socket (other Unix users cannot reach the
    owner socket). Returns it with the reason its calls would fail (the session keeps
    its token even then); `NoMemory` when none can be issued."""
    try:
        connection = _connection(home, start_hub=True)
        clean_stale_runs(home, connection)
        with HubClient(connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            shared = _shared_socket(hub.call("/v1/status", {}))
            issued = hub.call("/v1/admin/principals", {
                **launched, "action": "delegate", "name": name, "ttl": TOKEN_TTL_SECONDS,
                "binding": binding})
    except AmuxError as error:
        raise NoMemory(_reason(error)) from None
    token = rundirs.Token(str(issued["principal"]), binding, str(issued["token"]),
                          str(issued["token_id"]), own=False,
                          expires_at=issued.get("expires_at"), hub=shared,
                          hub_uid=connection.hub_uid)
    grant = Issued(token, connection)
    try:
        with HubClient(Connection(token.hub, token.token, binding, None, "isolated run",
                                  connection.hub_uid),
                       timeout=DISCOVERY_TIMEOUT_SECONDS) as agent:
            agent.call("/v1/binding", {})
    except AmuxError as error:
        return grant, (f"memory calls of this session will fail until this is fixed: "
                       f"{error.code}: {error.message}")
    return grant, None


def check(config: Path) -> str | None:
    """One call with the agent's own credential: the reason its memory calls will fail."""
    try:
        from amux.client.connection import read_config

        agent = read_config(config, "run", None)
        with HubClient(agent, timeout=DISCOVERY_TIMEOUT_SECONDS) as client:
            client.call("/v1/binding", {})
    except AmuxError as error:
        return (f"memory calls of this session will fail until this is fixed: {error.code}: "
                f"{error.message}")
    return None


def revoke(issued: Issued) -> str | None:
    """Revoke a run's delegated token; never raises. None when it is gone, else the warning:
    a revocation that fails (the Hub is gone, or cannot save: `storage_unavailable`) leaves
    the token valid, and its run directory must be kept, whose `launcher.pid` and
    `token.json` let the next launch retry it (`clean_stale_runs`)."""
    token = issued.token
    return _revoke(issued.connection, token.principal, token.token_id, own=token.own)


def _revoke(connection: Connection, principal: str, token_id: str, *, own: bool,
            ) -> str | None:
    """Revoke one delegated token: None when it is gone, else the warning (it stays valid
    until a later launch revokes it or its TTL ends). `own`: the launcher's principal
    delegated it to itself (`POST /v1/revoke`); else the owner did, for `principal`."""
    if own:
        path, body = "/v1/revoke", {"token_id": token_id}
    else:
        path, body = "/v1/admin/principals", {"action": "revoke", "name": principal,
                                              "token_id": token_id}
    try:
        with HubClient(connection, timeout=DISCOVERY_TIMEOUT_SECONDS) as hub:
            hub.call(path, body)
    except AmuxError as error:
        if error.code == "invalid_argument":  # no such token (expired) or principal left
            return None
        return (f"the session's delegated token {token_id} was not revoked ({error.code}: "
                f"{error.message}); its run directory is kept so the next `amux run` "
                "revokes it")
    return None


def clean_stale_runs(home: Path, connection: Connection, principal: str | None = None,
                     ) -> None:
    """Revoke the tokens of, and remove, run directories whose launcher is gone
    (this home's and the isolated runs root's, each only when it verifies as ours).

    A token a launcher delegated to itself can only be revoked by its own principal:
    one of another principal (`principal`: ours; None: unknown) is kept for a launch of
    that principal, and removed without a call once its TTL has passed.
    """
    for root, isolated in ((rundirs.plain_root(home), False), (rundirs.runs_root(), True)):
        if not rundirs.trusted(root, isolated=isolated):
            continue  # none yet, or not ours: what is there may have been planted
        with contextlib.suppress(OSError):
            for run_dir, token in rundirs.stale(root):
                if token is not None and not _expired(token):
                    own = token.get("self") is True
                    if own and token.get("principal") != principal:
                        continue  # not ours to revoke
                    if _revoke(connection, str(token.get("principal")),
                               str(token.get("token_id")), own=own) is not None:
                        continue  # kept: a later launch tries again
                rundirs.remove(run_dir)


def _expired(token: dict[str, object]) -> bool:
    expires = token.get("expires_at")
    return isinstance(expires, int | float) and not isinstance(expires, bool) \
        and expires <= time.time()
