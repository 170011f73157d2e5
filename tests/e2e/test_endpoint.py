"""`amux run --endpoint URL --model NAME AGENT`: the real agent on a fresh home (no login,
no config of its own) reaches a model server for that launch only, with memory.

The scripted model stands in for a local Ollama/vLLM/llama.cpp server. Each agent saves a
fact in its first session, a second session finds it, and resuming the first without
`--endpoint` reaches the same server again (the endpoint is frozen with the session). The
user's agent config is never written: after the runs the agent's home holds no file that
names the endpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Step, Text, ToolCall, mcp
from tests.mockmodel.agents import base_env
from tests.peers import npm_bin

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"
UPSERT = f"amux memory upsert {PATH} --expected-revision absent <<'EOF'\n{FACT}EOF"
ARGS = {"claude": ["-p", "{prompt}"], "codex": ["exec", "--skip-git-repo-check", "{prompt}"],
        "pi": ["-p", "{prompt}"]}


def story(agent: str) -> list[list[Step]]:
    if agent == "pi":
        return [[ToolCall("bash", {"command": UPSERT}), Text("Saved.")],
                [ToolCall("bash", {"command": "amux memory search tabs"}), Text("Tabs.")],
                [Text("Resumed.")]]
    return [[mcp("memory_upsert", {"path": PATH, "content": FACT,
                                   "expected_revision": "absent"}), Text("Saved.")],
            [mcp("memory_search", {"query": "tabs"}), Text("Tabs.")],
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
    env = base_env(tmp_path)  # PATH, locale and an empty HOME: nothing configured
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
    found = [r.text for r in model.tool_results("bash" if agent == "pi" else "memory_search")]
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
                                 env=env, cwd=work, capture_output=True, text=True, timeout=60)
            assert dry.returncode == 0, dry.stderr
            assert "sk-local-secret-123" not in dry.stdout + dry.stderr
            subprocess.run([sys.executable, "-m", "amux", "run", *args], env=env, cwd=work,
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    auth = [r.headers.get("authorization") or r.headers.get("x-api-key") or ""
            for r in model.requests if r.api is not None]  # model calls, not probes
    assert len(auth) >= 3 and all("sk-local-secret-123" in value for value in auth), auth
    assert os.environ.get("MY_ENDPOINT_KEY") is None
