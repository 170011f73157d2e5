"""One isolated run's directory: the client copy and the connection config, owned by the target.

    <runs root>/                 root-owned 0711 (traversable, not listable)
      <session id>/              root-owned 0711; launcher.pid, token.json (no secret)
        agent-config/            root-owned 0711
          memory/                the target's, 0700
            bin/amux             the single-file standard-library client, 0700
            memory.json          Appendix A connection config: the Hub's shared socket and
                                 uid, a delegated token bound to the session's binding, 0600

The runs root is outside the owner's 0700 home (`AMUX_RUNS_DIR`, default
`/var/lib/amux/runs`), so the target can reach its own directory and nothing
else: other users cannot list the root or enter another run's `memory/`. The
client copy runs with the target's `python3` (3.9 or newer) and needs nothing of
the amux installation, which may be unreadable to the target. Cleanup removes the
whole run directory; a run whose launcher died is removed (and its token
revoked) by the next launch.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from amux.client.bundle import build_client
from amux.client.wire import ClientError
from amux.launcher import rundirs
from amux.materializer.target import Target

DEFAULT_RUNS_ROOT = "/var/lib/amux/runs"


@dataclass(frozen=True)
class Materialized:
    run_dir: Path
    memory_dir: Path
    client: Path
    config: Path

    @property
    def bin_dir(self) -> Path:
        return self.client.parent


def runs_root(create: bool = True) -> Path:
    """`AMUX_RUNS_DIR`, else /var/lib/amux/runs; created root-owned 0711 when missing."""
    root = Path(os.environ.get("AMUX_RUNS_DIR") or DEFAULT_RUNS_ROOT)
    if create:
        root.mkdir(mode=0o711, parents=True, exist_ok=True)
        root.chmod(0o711)
        for directory in [root, *root.parents]:
            if not directory.stat().st_mode & stat.S_IXOTH:
                raise ClientError("invalid_argument", f"the runs directory {root} is not "
                                  f"reachable by other users: {directory} is not traversable "
                                  "(set AMUX_RUNS_DIR to a directory under traversable ones)")
    return root


def memory_dir(session_id: str) -> Path:
    """Where an isolated run's client copy (`bin/amux`) and connection config live."""
    return runs_root(create=False) / session_id / "agent-config" / "memory"


def materialize(session_id: str, target: Target, hub: str, token: str, binding: str,
                token_id: str | None, principal: str, *, hub_uid: int) -> Materialized:
    """Write the run directory for one isolated launch (run as root); `hub_uid` is the
    Hub's uid, which the copied client requires of the shared socket's listener."""
    memory = memory_dir(session_id)
    config_dir = memory.parent
    run_dir = config_dir.parent
    runs_root()  # created if missing, and checked to be reachable by the target
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(mode=0o711)
    rundirs.claim(run_dir, principal, token_id)
    config_dir.mkdir(mode=0o711)
    memory.mkdir(mode=0o700)
    bin_dir = memory / "bin"
    bin_dir.mkdir(mode=0o700)
    client = build_client(bin_dir / "amux")
    client.chmod(0o700)
    config = memory / rundirs.CONFIG_NAME
    rundirs.write_config(config, hub, token, binding, hub_uid=hub_uid)
    for path in (memory, bin_dir, client, config):
        os.chown(path, target.uid, target.gid, follow_symlinks=False)
    return Materialized(run_dir, memory, client, config)


def remove(run_dir: Path) -> None:
    shutil.rmtree(run_dir, ignore_errors=True)
