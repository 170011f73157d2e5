"""`amux memory mcp`: the stdio MCP server named `amux` (SPEC §3), standard library only.

It speaks both eras of the protocol, chosen per message as the 2026-07-28
revision allows: the stateless revision (`server/discover`, and every request
carrying its protocol version and client capabilities in `_meta`; results carry
`resultType`) and the initialize handshake of 2024-11-05 to 2025-11-25 that the
agent CLIs of today still use (`initialize`, `notifications/initialized`,
`ping`). Both eras share tools/list, tools/call and `notifications/cancelled`.

Tool calls run on their own threads so a cancellation can overtake them (the
answer of a cancelled request is dropped). Errors inside a tool (bad arguments,
Hub errors) are tool results with `isError: true`, so the model can read and
correct them; an unknown tool or method is a protocol error. It never starts a
Hub: one bounded capability check at start-up warns on stderr when memory is
not reachable, and the tools stay listed, identical, whatever the Hub's state.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from amux import __version__
from amux.client.tools import NAMES, TOOLS, MemoryTools, error_text
from amux.errors import AmuxError, InternalError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

MODERN_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Newest first: an initialize asking for something else gets the first."""
CHECK_TIMEOUT_SECONDS = 2.0
EXIT_GRACE_SECONDS = 1.5
"""At end of input, how long calls in flight may still answer (MCP clients wait 2 s)."""
SERVER_INFO = {"name": "amux", "title": "amux memory", "version": __version__}

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_CAPABILITIES = {"tools": {"listChanged": False}}

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = (
    -32700, -32600, -32601, -32602, -32603)
UNSUPPORTED_VERSION = -32022


class ProtocolError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class Server:
    """Reads JSON-RPC lines from `source`, writes answers to `sink`, until end of input."""

    def __init__(self, source: BinaryIO, sink: BinaryIO, tools: MemoryTools | None = None,
                 log: Any = None) -> None:
        self._source = source
        self._sink = sink
        self._tools = tools or MemoryTools()
        self._log = log or sys.stderr
        self._write_lock = threading.Lock()
        self._running: dict[Any, bool] = {}  # request id -> cancelled?
        self._running_lock = threading.Lock()

    def check_hub(self, timeout: float = CHECK_TIMEOUT_SECONDS) -> bool:
        """The one capability check; a failure is a warning, never fatal."""
        try:
            self._tools.check(timeout)
            return True
        except AmuxError as error:
            print(f"amux memory mcp: warning: memory is not available ({error.code}: "
                  f"{error.message}); the tools stay listed and their calls report the error "
                  "until it is", file=self._log, flush=True)
            return False

    def serve(self) -> None:
        workers: list[threading.Thread] = []
        try:
            for line in self._source:
                if not line.strip():
                    continue
                worker = self._receive(line)
                if worker is not None:
                    workers = [w for w in workers if w.is_alive()]
                    workers.append(worker)
        finally:
            deadline = time.monotonic() + EXIT_GRACE_SECONDS
            for worker in workers:  # answer what was asked before the input ended
                worker.join(max(0.0, deadline - time.monotonic()))
            self._tools.close()

    # -- messages -----------------------------------------------------------------

    def _receive(self, line: bytes) -> threading.Thread | None:
        try:
            message = json.loads(line)
        except ValueError:
            self._error(None, PARSE_ERROR, "Parse error: not a JSON line")
            return None
        if isinstance(message, list):
            self._error(None, INVALID_REQUEST, "batches are not supported")
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._error(_id_of(message), INVALID_REQUEST, "not a JSON-RPC 2.0 message")
            return None
        method = message.get("method")
        if "id" not in message:
            if method == "notifications/cancelled":
                self._cancel(message.get("params"))
            return None  # notifications/initialized and others: nothing to answer
        request_id = message["id"]
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            self._error(None, INVALID_REQUEST, "id must be a string or an integer")
            return None
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                return None  # a response to a request we never send: ignore
            self._error(request_id, INVALID_REQUEST, "method must be a string")
            return None
        params = message.get("params", {})
        try:
            if not isinstance(params, dict):
                raise ProtocolError(INVALID_PARAMS, "params must be an object")
            modern = _is_modern(method, params)
            if method == "tools/call":
                return self._start_call(request_id, params, modern)
            self._result(request_id, self._answer(method, params, modern), modern)
        except ProtocolError as error:
            self._error(request_id, error.code, str(error), error.data)
        return None

    def _answer(self, method: str, params: dict[str, Any], modern: bool) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
            return {"protocolVersion": version, "capabilities": _CAPABILITIES,
                    "serverInfo": SERVER_INFO}
        if method == "server/discover":
            return {"supportedVersions": list(MODERN_VERSIONS), "capabilities": _CAPABILITIES,
                    "ttlMs": 0, "cacheScope": "public"}
        if method == "tools/list":
            return {"tools": TOOLS, **({"ttlMs": 0, "cacheScope": "public"} if modern else {})}
        if method == "ping" and not modern:
            return {}
        raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method}", method)

    def _start_call(self, request_id: Any, params: dict[str, Any],
                    modern: bool) -> threading.Thread:
        name = params.get("name")
        if not isinstance(name, str) or name not in NAMES:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments") or {}
        with self._running_lock:
            self._running[request_id] = False
        worker = threading.Thread(target=self._call, args=(request_id, name, arguments, modern),
                                  name=f"amux-mcp-{name}", daemon=True)
        worker.start()
        return worker

    def _call(self, request_id: Any, name: str, arguments: Any, modern: bool) -> None:
        try:
            text, is_error = self._tools.call(name, arguments)
        except Exception as exc:  # a bug: report it as the tool's failure, keep serving
            text = error_text(InternalError(f"internal error in the amux MCP server: {exc!r}"))
            is_error = True
        result = {"content": [{"type": "text", "text": text}], "isError": is_error}
        with self._running_lock:
            cancelled = self._running.pop(request_id, False)
        if not cancelled:
            self._result(request_id, result, modern)

    def _cancel(self, params: Any) -> None:
        if isinstance(params, dict):
            with self._running_lock:
                if params.get("requestId") in self._running:
                    self._running[params["requestId"]] = True

    # -- output -------------------------------------------------------------------

    def _result(self, request_id: Any, result: dict[str, Any], modern: bool) -> None:
        if modern:
            result = {**result, "resultType": "complete",
                      "_meta": {_SERVER_INFO_KEY: SERVER_INFO}}
        self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"
        with self._write_lock:
            self._sink.write(data)
            self._sink.flush()


def _is_modern(method: str, params: dict[str, Any]) -> bool:
    """Whether this request speaks 2026-07-28; checks its envelope if so."""
    meta = params.get("_meta")
    if method == "initialize" or not isinstance(meta, dict) or _VERSION_KEY not in meta:
        if method == "server/discover":
            raise ProtocolError(INVALID_PARAMS, f"server/discover needs _meta.{_VERSION_KEY}")
        return False
    version = meta.get(_VERSION_KEY)
    if not isinstance(version, str) or not isinstance(meta.get(_CAPABILITIES_KEY), dict):
        raise ProtocolError(INVALID_PARAMS, f"params._meta needs {_VERSION_KEY} (a string) "
                            f"and {_CAPABILITIES_KEY} (an object)")
    if version not in MODERN_VERSIONS:
        raise ProtocolError(UNSUPPORTED_VERSION, "Unsupported protocol version", {
            "supported": [*MODERN_VERSIONS, *HANDSHAKE_VERSIONS], "requested": version})
    return True


def _id_of(message: Any) -> Any:
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, (str, int)) else None


def main() -> int:
    """Serve MCP on stdin/stdout until stdin ends."""
    server = Server(sys.stdin.buffer, sys.stdout.buffer)
    server.check_hub()
    server.serve()
    return 0

if __name__ == "__main__":
    sys.exit(main())
