"""A real Hub with all three listeners open: the owner socket, the 0666 shared socket and
TLS (a self-signed certificate), memory on; optionally under a descriptor limit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil

from amux.client.connection import Connection
from tests.hub.tlscert import self_signed
from tests.hubproc import HubProcess


@dataclass
class Exposed:
    hub: HubProcess
    shared: str
    tls_port: int
    cert: Path

    def connection(self, hub: str, ca_file: str | None = None) -> Connection:
        return Connection(hub, self.hub.owner_token, None, ca_file, "test")

    def rss(self) -> int:
        return int(psutil.Process(self.hub.process.pid).memory_info().rss)

    def cap(self) -> int:
        """The connections each listener takes (the readiness line says)."""
        return int(self.hub.status["listeners"][0]["connections"]["max"])


def expose(home: Path, work: Path, wrapper: tuple[str, ...] = ()) -> Exposed:
    """Configure the listeners on a first Hub, then start the one returned (listeners
    open at start) with `wrapper` in front (e.g. `prlimit --nofile=N`); the caller stops
    it."""
    cert, key = self_signed(work)
    shared = home.parent / "shared" / "hub.sock"
    first = HubProcess(home)
    for name, value in (("listeners.shared_socket", str(shared)),
                        ("listeners.tls_address", "127.0.0.1:0"),
                        ("listeners.tls_cert", str(cert)), ("listeners.tls_key", str(key)),
                        ("memory.enabled", "true")):
        assert first.call("/v1/admin/config", {"action": "set", "key": name,
                                               "value": value})[0] == 200
    assert first.stop() == 0
    hub = HubProcess(home, wrapper)
    address = next(e["address"] for e in hub.status["listeners"] if e["kind"] == "tls")
    return Exposed(hub, str(shared), int(address.rsplit(":", 1)[1]), cert)
