"""The Unix user an isolated run belongs to, and the environment its agent gets.

The agent runs with the target's UID, GID and supplementary groups, in the
target's own home: `HOME`, `USER`, `LOGNAME`, `SHELL` are the target's, and
each adapter resets what its agent reads its config from (`Adapter.isolated_env`:
`CODEX_HOME` is `<home>/.codex`, `PI_CODING_AGENT_DIR` `<home>/.pi/agent`,
`CLAUDE_CONFIG_DIR` is cleared). Nothing of
the service's identity or secrets passes: every `AMUX_*` variable, the service's
XDG directories, SSH/sudo/GPG agents, and every variable whose
name looks like a credential (key, token, secret, password, auth, cookie…) are
dropped. Agent credentials for the target are provisioned explicitly: in the
target's own home (`~/.codex/auth.json`, `~/.claude/…`, `~/.pi/agent/…`), or
named with `amux run --pass-env NAME` for one launch. PATH keeps its first
occurrence of each directory.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
from collections.abc import Mapping

from amux.envpatch import EnvPatch
from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple

_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT", re.IGNORECASE)
_DROPPED_PREFIXES = ("AMUX_", "XDG_", "SSH_", "SUDO_", "GPG_", "GNUPG", "KRB5", "DBUS_")
_DROPPED = frozenset({"HOME", "USER", "LOGNAME", "SHELL", "MAIL", "OLDPWD", "PWD", "VIRTUAL_ENV",
                      "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE",
                      "NODE_OPTIONS", "NPM_CONFIG_USERCONFIG", "LD_PRELOAD",
                      "LD_LIBRARY_PATH"})


class Target(NamedTuple):
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str
    shell: str

    @classmethod
    def lookup(cls, name: str) -> Target:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise InvalidArgument(f"--as-user: no Unix user {name!r}") from None
        if entry.pw_uid == 0:
            raise InvalidArgument("--as-user: an isolated run cannot be root")
        groups = tuple(sorted(set(os.getgrouplist(entry.pw_name, entry.pw_gid))))
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir,
                   entry.pw_shell or "/bin/sh")

    def group_names(self) -> list[str]:
        return [grp.getgrgid(gid).gr_name for gid in self.groups]


def isolation(base: Mapping[str, str], target: Target, passed: tuple[str, ...] = (),
              resets: EnvPatch | None = None) -> EnvPatch:
    """What an isolated agent's environment changes in `base` (the module docstring says
    what and why): what is dropped (unless `passed`), the target's own identity, then
    the adapters' `resets`, then PATH deduplicated."""
    dropped = tuple(name for name in base if name not in passed and (
        name in _DROPPED or name.startswith(_DROPPED_PREFIXES) or _SECRET_NAME.search(name)))
    own = EnvPatch({"HOME": target.home, "USER": target.name, "LOGNAME": target.name,
                    "SHELL": target.shell}, dropped)
    path = EnvPatch({"PATH": dedupe_path(base.get("PATH", os.defpath))})
    return own.then(EnvPatch() if resets is None else resets).then(path)


def dedupe_path(path: str) -> str:
    """PATH with each directory once, at its first place."""
    seen: list[str] = []
    for item in path.split(os.pathsep):
        if item and item not in seen:
            seen.append(item)
    return os.pathsep.join(seen)
