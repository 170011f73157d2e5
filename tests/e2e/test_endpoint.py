"""`amux run --endpoint URL --model NAME AGENT`: the real agent on a fresh home (no login,
no config of its own) reaches a model server for that launch only, with memory.

The scripted model stands in for a local Ollama/vLLM/llama.cpp server. Each agent saves a
fact in its first session, a second session finds it, and resuming the first without
`--endpoint` reaches the same server again (the endpoint is frozen with the session). The
user's agent config is never written: after the runs the agent's home holds no file that
names the endpoint. Each agent given the URL form it does not take gets its own, and a web
server that is no model server is refused before any agent starts (a user's shell: the
installed `amux`, a fresh home, no AMUX_* variable).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import PROMPT
from tests.e2e.story import UserShell
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Step, Text, ToolCall, mcp
from tests.mockmodel.agents import base_env
from tests.peers import npm_bin, peer_env

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"

ARGS = {"claude": ["-p", "{prompt}"], "codex": ["exec", "--skip-git-repo-check", "{prompt}"],
        "pi": ["-p", "{prompt}"]}


def story(agent: str) -> list[list[Step]]:
    """The same story for every agent: Pi 1.x too has the MCP tools (on Chat Completions
    named in full)."""
    def call(name: str, arguments: dict[str, str]) -> Step:
        return ToolCall(f"mcp__amux__{name}", arguments) if agent == "pi" else mcp(name, arguments)

    return [[call("memory_upsert", {"path": PATH, "content": FACT,
                                    "expected_revision": "absent"}), Text("Saved.")],
            [call("memory_search", {"query": "tabs"}), Text("Tabs.")],
            [Text("Resumed.")]]


def amux(hub: HubProcess, env: dict[str, str], cwd: Path, *args: str,
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "amux", "run", *args],
                          env={**env, "AMUX_HOME": str(hub.home)}, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.parametrize("agent", ["claude", "codex", "pi"])
def test_an_agent_on_a_fresh_home_reaches_the_endpoint_with_memory(
        memory_hub: HubProcess, tmp_path: Path, agent: str) -> None:
    binary = npm_bin(agent)
    env = peer_env(agent, base_env(tmp_path))  # PATH, locale, an empty HOME: nothing configured
    work = tmp_path / "work"
    work.mkdir()
    with MockModel(*story(agent)) as model:
        url = model.url if agent == "claude" else model.base_url
        endpoint = ["--endpoint", url, "--model", "local-model"]

        def args(prompt: str) -> list[str]:
            return [part.format(prompt=prompt) for part in ARGS[agent]]

        first = amux(memory_hub, env, work, *endpoint, str(binary), "--",
                     *args("Remember: I indent with tabs."))
        amux(memory_hub, env, work, *endpoint, str(binary), "--", *args("How do I indent?"))
        session = first.stderr.strip().splitlines()[-1].rsplit(" ", 1)[-1]
        assert first.stderr.strip().splitlines()[-1].startswith("amux run: session ")
        # the closing line's own resume command, without --endpoint: the frozen one is used
        amux(memory_hub, env, work, "--resume", session, "--", *args("Still there?"))
    main = model.main()
    assert [r.conversation for r in main if r.api is not None][:1] == [0]
    assert {r.body.get("model") for r in main} == {"local-model"}
    state = json.loads((memory_hub.home / "sessions" / session / "state.json").read_text())
    assert state["endpoint"] == {"url": url, "model": "local-model", "api": None,
                                 "key_env": None}
    assert memory_hub.call("/v1/memory/get", {"path": PATH})[1]["content"] == FACT
    found = [r.text for r in model.tool_results(
        "mcp__amux__memory_search" if agent == "pi" else "memory_search")]
    assert any(PATH in text for text in found), found
    assert any(r.conversation == 2 for r in main)  # the resumed session reached the endpoint
    home = Path(env["HOME"])
    for path in home.rglob("*"):
        if path.is_file() and path.stat().st_size < 1 << 20:
            assert url not in path.read_text(errors="replace"), f"{path} names the endpoint"


def test_refusals_name_what_the_agent_needs(memory_hub: HubProcess, tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "AMUX_HOME": str(memory_hub.home)}

    def refused(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "amux", "run", "--dry-run", *args],
                              env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done
        return done.stderr

    url = "http://127.0.0.1:9/v1"
    assert "Anthropic Messages endpoint" in refused("--endpoint", url, "--model", "m",
                                                    "--endpoint-api", "openai",
                                                    str(npm_bin("claude")))
    assert "Responses API" in refused("--endpoint", url, "--model", "m", "--endpoint-api",
                                      "anthropic", str(npm_bin("codex")))
    assert "no way to point" in refused("--endpoint", url, "--model", "m", "true")
    assert "go together" in refused("--endpoint", url, str(npm_bin("pi")))
    assert "not set in this environment" in refused(
        "--endpoint", url, "--model", "m", "--endpoint-key-env", "AMUX_TEST_NO_SUCH_KEY",
        str(npm_bin("pi")))


def test_a_key_reaches_the_endpoint_and_never_the_dry_run(memory_hub: HubProcess,
                                                           tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "AMUX_HOME": str(memory_hub.home),
           "MY_ENDPOINT_KEY": "sk-local-secret-123"}
    work = tmp_path / "work"
    work.mkdir()
    with MockModel([Text("Hi.")], [Text("Hi.")], [Text("Hi.")]) as model:
        for agent in ("claude", "codex", "pi"):
            url = model.url if agent == "claude" else model.base_url
            args = ["--endpoint", url, "--model", "m", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                    str(npm_bin(agent)), "--", *(a.format(prompt="hi") for a in ARGS[agent])]
            dry = subprocess.run([sys.executable, "-m", "amux", "run", "--dry-run", *args],
                                 env=peer_env(agent, env), cwd=work, capture_output=True,
                                 text=True, timeout=60)
            assert dry.returncode == 0, dry.stderr
            assert "sk-local-secret-123" not in dry.stdout + dry.stderr
            subprocess.run([sys.executable, "-m", "amux", "run", *args],
                           env=peer_env(agent, env), cwd=work,
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    auth = [r.headers.get("authorization") or r.headers.get("x-api-key") or ""
            for r in model.requests if r.api is not None]  # model calls, not probes
    assert len(auth) >= 3 and all("sk-local-secret-123" in value for value in auth), auth
    assert os.environ.get("MY_ENDPOINT_KEY") is None


ONE_PROMPT = {"claude": ["-p", "Say hi."], "codex": ["exec", "--skip-git-repo-check", "Say hi."],
              "copilot": ["-p", "Say hi."], "gemini": ["--skip-trust", "-p", "Say hi."],
              "opencode": ["run", "Say hi."], "pi": ["-p", "Say hi."], "qwen": ["Say hi."],
              "cline": ["Say hi."], "kilo": ["run", "Say hi."]}
"""Each agent's one-prompt form (its adapter's `prompt_args`), in a work directory that is no
git repository and no folder Gemini trusts."""


def sandbox(agent: str, package_cache: Path) -> dict[str, str]:
    """What this sandbox needs, not amux: Copilot's one package cache, OpenCode and Kilo
    offline."""
    return {"copilot": {"COPILOT_PKG_CACHE_HOME": str(package_cache)},
            "opencode": {"npm_config_offline": "true"},
            "kilo": {"npm_config_offline": "true", "KILO_TELEMETRY_LEVEL": "off"}}.get(agent, {})


@pytest.mark.timeout(400)
@pytest.mark.parametrize("agent", sorted(ADAPTERS))
def test_an_agent_given_the_other_url_form_gets_its_own(tmp_path: Path, package_cache: Path,
                                                         agent: str) -> None:
    """A `/v1` given to Claude reached `/v1/v1/messages`, the root given to Codex
    `/responses`, and nothing said so. Each agent given the form it does not take (the
    root for the OpenAI agents, `/v1` for Claude, `/v1beta` for Gemini) gets its own, one
    line says so, and every request it sends reaches a path the model server serves."""
    npm_bin(agent)
    adapter = ADAPTERS[agent]
    assert {arg for arg in adapter.prompt_args if arg != PROMPT} <= set(ONE_PROMPT[agent])
    shell = UserShell(tmp_path, **sandbox(agent, package_cache))
    shell.env = peer_env(agent, shell.env)  # Pi 1.x: Node 22
    try:
        on = shell.amux("system", "config", "set", "memory.enabled", "true")
        assert on.returncode == 0, on.stderr
        with MockModel([Text("Hi from the endpoint.")]) as model:
            right = model.url + next(iter(adapter.endpoint_paths.values()))
            wrong = (model.url if right != model.url
                     else f"{model.url}/v1beta" if agent == "gemini" else model.base_url)
            done = shell.amux("run", "--endpoint", wrong, "--model", "mock-model", agent, "--",
                              *ONE_PROMPT[agent])
    finally:
        shell.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert (f"amux run: warning: --endpoint {wrong}: {adapter.display_name} "
            f"{'adds' if right == model.url else 'needs'} ") in done.stderr
    assert f", so it gets {right}\n" in done.stderr
    assert model.main(), "the agent reached its model"
    assert all(r.path.startswith("/v1beta/" if agent == "gemini" else "/v1/")
               for r in model.main())
    assert [(r.method, r.path) for r in model.requests if r.status >= 400] == []


@pytest.mark.timeout(300)
def test_a_web_server_that_is_no_model_server_is_refused_before_any_agent_starts(
        tmp_path: Path, package_cache: Path) -> None:
    """Pointed at a plain web server (`python -m http.server`), Claude hung for 180 s and
    Codex printed its HTML 501 page with no amux word. Each agent is refused in one amux
    line within seconds, naming what answered and what the agent needs; the server saw
    amux's checks and nothing of any agent."""
    for agent in ADAPTERS:
        npm_bin(agent)
    site = tmp_path / "site"
    site.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1", "--directory", str(site)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    shell = UserShell(tmp_path, COPILOT_PKG_CACHE_HOME=str(package_cache))
    url = f"http://127.0.0.1:{port}/v1"  # the one form `amux run --help` showed every agent
    said: dict[str, tuple[int, list[str], float]] = {}
    try:
        deadline = time.monotonic() + 30
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "http.server did not start"
                time.sleep(0.1)
        for agent in sorted(ADAPTERS):
            started = time.monotonic()
            done = shell.amux("run", "--endpoint", url, "--model", "m", agent, "--",
                              *ONE_PROMPT[agent], timeout=60)
            said[agent] = (done.returncode, done.stderr.splitlines(),
                           time.monotonic() - started)
        listed = shell.amux("sessions", "list")
    finally:
        shell.close()
        os.killpg(server.pid, signal.SIGKILL)
        _, log = server.communicate(timeout=30)
    for agent, (code, lines, seconds) in said.items():
        assert code == 2 and len(lines) == 1, (agent, lines)
        [line] = lines
        assert line.startswith(f"amux run: invalid_argument: --endpoint {url}"), line
        assert ": no model server answers there: " in line and " (text/html" in line, line
        assert "SimpleHTTP/0.6 Python/" in line and "not JSON" in line, line
        assert f"; {ADAPTERS[agent].display_name} needs " in line, line
        assert seconds < 20, (agent, seconds)
    asked = set(re.findall(r'"(\w+) (\S+) HTTP/1\.[01]"', log))
    assert asked == {("GET", "/"), ("GET", "/v1/models"), ("POST", "/v1/messages"),
                     ("GET", "/v1beta/models")}, log  # the checks, no agent's request
    assert json.loads(listed.stdout)["sessions"] == []
