"""Finding the Hub (SPEC §3): which address and token this client uses, and why.

In order: `AMUX_MEMORY_CONFIG` (a connection-config file, Appendix A), then
`AMUX_HUB` with `AMUX_TOKEN`, then the local default, the Hub owner's own
connection config at `<AMUX_HOME>/credentials/owner.json`. `AMUX_MEMORY_BINDING`
adds the binding a managed session was frozen to. The client never starts a Hub.

Each connection also knows which uid the Hub must run as (`hub_uid`): on a Unix
socket the transport checks the listener's uid before it sends the token, so a
socket another user put in the Hub's place gets nothing (SPEC §4). It is the
connection config's `hub_uid` when present (the launcher writes it, also into an
isolated run's config, which belongs to the agent's user), else the owner of the
config file (the local default is written by the Hub itself, a run's config by
the Hub's user), else, for `AMUX_HUB`, this process's own uid.
"""

from __future__ import annotations

import json
import os
import stat

from amux.errors import Forbidden, HubUnreachable, InvalidArgument

TYPE_CHECKING = False  # `typing` costs an agent's every call a few ms; mypy reads this block
if TYPE_CHECKING:
    from collections.abc import Mapping


class Connection:
    """Where the Hub is and how to authenticate, with where that came from.

    A plain class, not a dataclass: `dataclasses` imports `inspect`, ~10 ms of
    every CLI call's start.
    """

    __slots__ = ("binding", "ca_file", "hub", "hub_uid", "source", "token")

    def __init__(self, hub: str, token: str | None, binding: str | None, ca_file: str | None,
                 source: str, hub_uid: int | None = None) -> None:
        self.hub = hub
        self.token = token
        self.binding = binding
        self.ca_file = ca_file
        self.source = source
        self.hub_uid = os.geteuid() if hub_uid is None else hub_uid
        """The uid the Hub runs as (module docstring); root is accepted too (transport)."""

    def __repr__(self) -> str:  # never the token
        return f"Connection(hub={self.hub!r}, source={self.source!r})"

    @property
    def is_local_default(self) -> bool:
        return self.source == "local default"


def owner_config_path(home: str | os.PathLike[str]) -> str:
    return os.path.join(home, "credentials", "owner.json")


def _check_hub(hub: object, where: str) -> str:
    if isinstance(hub, str) and (
        hub.startswith("unix:/") or hub.startswith("https://") or hub.startswith("http://")
    ):
        return hub
    raise InvalidArgument(f"{where}: hub must be 'unix:/path' or 'https://host:port', got {hub!r}"
    )


def read_config(path: str | os.PathLike[str], source: str, binding: str | None) -> Connection:
    """Load and check a connection-config file (version 1, 0600)."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = os.fstat(handle.fileno())
            data = json.load(handle)
    except FileNotFoundError:
        raise HubUnreachable(f"no connection config at {path} ({source})") from None
    except (OSError, ValueError) as exc:
        message = f"cannot read connection config {path}: {exc}"
        raise InvalidArgument(message) from None
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise Forbidden(
            f"connection config {path} holds a token but is readable by others "
            f"(mode {mode:04o}); run: chmod 600 {path}",
        )
    if not isinstance(data, dict) or data.get("version") != 1:
        raise InvalidArgument(f"{path} is not a version 1 connection config")
    token = data.get("token")
    if not isinstance(token, str):
        raise InvalidArgument(f"{path} has no token")
    hub_uid = data.get("hub_uid", info.st_uid)
    if not isinstance(hub_uid, int) or isinstance(hub_uid, bool) or hub_uid < 0:
        raise InvalidArgument(f"{path}: hub_uid must be a uid (an integer "
                              f"of 0 or more), got {hub_uid!r}")
    file_binding = data.get("binding")
    ca_file = data.get("ca_file")
    return Connection(
        _check_hub(data.get("hub"), str(path)), token,
        binding or (file_binding if isinstance(file_binding, str) else None),
        ca_file if isinstance(ca_file, str) else None, source, hub_uid,
    )


def find_connection(env: Mapping[str, str] = os.environ) -> Connection:
    """The connection this process should use, by the SPEC §3 lookup order."""
    binding = env.get("AMUX_MEMORY_BINDING") or None
    configured = env.get("AMUX_MEMORY_CONFIG")
    if configured:
        return read_config(configured, "AMUX_MEMORY_CONFIG", binding)
    hub = env.get("AMUX_HUB")
    if hub:
        token = env.get("AMUX_TOKEN") or None
        return Connection(_check_hub(hub, "AMUX_HUB"), token, binding, None, "AMUX_HUB")
    from amux.client.home import home_dir

    home = home_dir(env)
    path = owner_config_path(home)
    if not os.path.exists(path):
        raise HubUnreachable(
            "no Hub configured: set AMUX_MEMORY_CONFIG or AMUX_HUB, or start one with "
            f"`amux hub start` (AMUX_HOME={home})",
        )
    return read_config(path, "local default", binding)
