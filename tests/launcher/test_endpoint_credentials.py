"""`amux run --endpoint http://user:password@host/v1`: the password reaches the agent's
environment only. The reachability check's `Host:` carried it, and refusal lines, closing
lines, the dry run, state.json and Codex's argv (world-readable in /proc) held it whole.

A recording model server on loopback and scripted agents named like the real ones, which
record their argv (and /proc's view of it) and environment; everything amux printed or
wrote is searched for a password made for the test.
"""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amux.launcher import state
from tests.agentlog import KEEPS_SESSION
from tests.hubproc import HubProcess
from tests.launcher.fakeagents import Launcher, enable, sessions_cli

RECORDER = '''#!{python}
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("fake-agent 1.0")
    sys.exit(0)
{keeps_session}
with open("/proc/self/cmdline", "rb") as cmdline:
    seen = cmdline.read().decode(errors="replace")
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps({{"agent": name, "argv": args, "cmdline": seen,
                          "env": dict(os.environ)}}) + "\\n")
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "0")))
'''


class ModelServer:
    """Answers the APIs' questions as a model server (an empty model list, an Anthropic
    error for an empty Messages request), everything else 404, and keeps each request's
    raw head."""

    def __init__(self) -> None:
        self.heads: list[str] = []
        heads = self.heads

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                heads.append(f"{self.requestline}\r\n{self.headers}")
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, body = ((200, b'{"object": "list", "data": []}')
                                if self.path == "/v1/models" and self.command == "GET"
                                else (400, b'{"type": "error", "error": {}}')
                                if self.path == "/v1/messages" else (404, b""))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer()
    yield server
    server.close()


@pytest.fixture
def recording(hub: HubProcess, tmp_path: Path) -> Launcher:
    launcher = Launcher(hub.home, tmp_path)
    for name in ("claude", "codex"):
        (launcher.bin / name).write_text(RECORDER.format(python=sys.executable,
                                                         keeps_session=KEEPS_SESSION))
    enable(hub)
    return launcher


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def everything_under(root: Path) -> str:
    return "\n".join(path.read_text(errors="replace") for path in sorted(root.rglob("*"))
                     if path.is_file() and not path.is_symlink())


@pytest.mark.timeout(180)
def test_the_password_reaches_the_agents_environment_and_nothing_else(
        hub: HubProcess, recording: Launcher, model: ModelServer) -> None:
    password = f"s3cr3t-{secrets.token_hex(6)}"
    root = f"http://127.0.0.1:{model.port}"  # Claude's form; Codex's is the API's /v1
    shown = f"{root}/v1"
    url = shown.replace("://", f"://me:{password}@")
    endpoint = ("--endpoint", url, "--model", "m")
    said: list[str] = []

    def run(*args: str, **options: Any) -> Any:
        done = recording.run(*args, **options)
        said.extend((done.stdout, done.stderr))
        return done

    dry = run("--dry-run", *endpoint, "codex", "--", "exec", "hi")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["env"]["AMUX_ENDPOINT_AUTH_TOKEN"] == "<redacted>"
    assert f'model_providers.amux_endpoint.base_url="{shown}"' in report["argv"]

    nothing = f"http://me:{password}@127.0.0.1:{free_port()}"
    refused = run("--endpoint", nothing, "--model", "m", "claude", "--", "-p", "hi")
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"amux run: invalid_argument: --endpoint "
                                     f"{nothing.replace(f'me:{password}@', '')}: nothing")

    assert run(*endpoint, "codex", "--", "exec", "hi").returncode == 0
    # Claude is given the server's root (a /v1 would be put right, said in a line naming
    # the URL without them)
    failed = run(*endpoint, "claude", "--", "-p", "hi", env={"FAKE_AGENT_EXIT": "1"})
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[0] == (f"amux run: warning: --endpoint {shown}: Claude "
                                             f"Code adds /v1/… itself, so it gets {root}")
    assert failed.stderr.splitlines()[-1].endswith(
        f"If it could not reach its model: check that {root} serves the model 'm'")
    assert run("--endpoint", url.removesuffix("/v1"), "--model", "m", "claude", "--",
               "-p", "hi").returncode == 0

    records = recording.records()
    for record in records:  # never in argv, which anyone can read
        assert password not in json.dumps(record["argv"]) and password not in record["cmdline"]
    codex, failing, claude = [record for record in records  # not Codex's app-server hook
                              if "app-server" not in record["argv"]]
    assert codex["agent"] == "codex" and claude["agent"] == failing["agent"] == "claude"
    assert f'model_providers.amux_endpoint.base_url="{shown}"' in codex["argv"]
    assert ('model_providers.amux_endpoint.env_http_headers={Authorization = '
            '"AMUX_ENDPOINT_AUTH_TOKEN"}') in codex["argv"]
    assert codex["env"]["AMUX_ENDPOINT_AUTH_TOKEN"] == (
        "Basic " + base64.b64encode(f"me:{password}".encode()).decode())
    # the agent's own, in its environment
    assert claude["env"]["ANTHROPIC_BASE_URL"] == failing["env"]["ANTHROPIC_BASE_URL"] == \
        url.removesuffix("/v1")

    frozen = sorted((json.loads((path / "state.json").read_text())["endpoint"]
                     for path in recording.sessions()), key=lambda frozen: frozen["url"])
    assert frozen == [{"url": url, "model": "m", "api": None, "key_env": None,
                       "credentials": True} for url in (root, root, shown)]
    said.append(json.dumps(sessions_cli(hub, "list")))
    said.append(everything_under(hub.home))
    said.extend(model.heads)
    assert model.heads and all(f"Host: 127.0.0.1:{model.port}\n" in head
                               for head in model.heads)
    assert [text for text in said if password in text] == []


@pytest.mark.timeout(180)
def test_a_resume_is_given_the_user_and_password_again(
        hub: HubProcess, recording: Launcher, model: ModelServer) -> None:
    """state.json keeps the URL without them: a resume without them is refused with one
    line naming the fix; with them (the same URL) it runs, and the agent has them."""
    password = f"s3cr3t-{secrets.token_hex(6)}"
    shown = f"http://127.0.0.1:{model.port}"
    url = shown.replace("://", f"://me:{password}@")
    assert recording.run("--endpoint", url, "--model", "m", "claude", "--",
                         "-p", "hi").returncode == 0
    [session] = [path.name for path in recording.sessions()]

    refused = recording.run("--resume", session)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr == (
        f"amux run: invalid_argument: session {session}'s --endpoint {shown} had a user and "
        "password, which amux does not keep; give them again: amux run --resume "
        f"{session} --endpoint http://USER:PASSWORD@127.0.0.1:{model.port} --model m\n")
    assert recording.run("--resume", session, "--endpoint", shown,
                         "--model", "m").stderr == refused.stderr
    other = recording.run("--resume", session, "--endpoint", url + "/v2", "--model", "m")
    assert other.returncode == 2 and f"started with --endpoint {shown} --model m" in other.stderr
    assert password not in other.stderr

    # given in another form (Claude's /v1, put right as in a new session), it is the same
    resumed = recording.run("--resume", session, "--endpoint", url + "/v1", "--model", "m")
    assert resumed.returncode == 0, resumed.stderr
    assert password not in resumed.stdout + resumed.stderr
    first, again = recording.records()
    assert "--resume" in again["argv"] and again["env"]["ANTHROPIC_BASE_URL"] == url
    assert again["argv"][again["argv"].index("--resume") + 1] == first["argv"][
        first["argv"].index("--session-id") + 1]


def test_a_state_saved_whole_before_reads_without_them(tmp_path: Path) -> None:
    """A session frozen with the URL whole (before this fix) is read as one frozen since:
    nothing shows them, and its resume asks for them again."""
    url = "http://me:s3cr3t@127.0.0.1:11434/v1"
    old = state.SessionState(
        id=state.new_session_id(), agent="claude", adapter="claude", adapter_version=None,
        channel="none", binding=None, principal=None, protocol_version=None, protocol=None,
        instructions=None, suppression={}, agent_session="a", created_at=1.0, cwd="/",
        endpoint={"url": url, "model": "m", "api": None, "key_env": None})
    state.save(tmp_path, old)
    assert state.load(tmp_path, old.id).endpoint == {
        "url": "http://127.0.0.1:11434/v1", "model": "m", "api": None, "key_env": None,
        "credentials": True}
