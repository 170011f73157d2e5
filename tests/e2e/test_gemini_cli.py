"""The real Gemini CLI (fixtures/npm, @google/gemini-cli 0.61.0) against the scripted mock model.

No amux launcher yet (issue 15): these pin what docs/agent-findings-gemini.md established
about `gemini -p` at its default settings, pointed at the mock with an API key
(`tests.mockmodel.agents.gemini_env`): the request it sends, how MCP tools reach the model,
that its native memory tool is absent from a headless run, and where its sessions live.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.story import gemini_declared
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Text, mcp
from tests.mockmodel.agents import amux_mcp_argv, gemini_env, gemini_mcp_server, run_agent
from tests.mockmodel.apis import Gemini
from tests.peers import npm_bin

NOTE = "# Note\nsaved by the agent\n"


def gemini(argv: list[str], env: dict[str, str], cwd: Path,
           ) -> subprocess.CompletedProcess[str]:
    return run_agent([npm_bin("gemini"), *argv], env, cwd, timeout=120)


def test_gemini_p_answers_with_the_scripted_text(tmp_path: Path) -> None:
    with MockModel([Text("HELLO-FROM-MOCK")]) as model:
        done = gemini(["-p", "Hi."], gemini_env(tmp_path, model), tmp_path / "work")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "HELLO-FROM-MOCK"
    [main] = model.main()
    assert main.path.endswith(":streamGenerateContent") and main.query == "alt=sse"
    assert main.api_class is not None and issubclass(main.api_class, Gemini)
    assert main.headers["x-goog-api-key"] == "sk-dummy"
    assert main.instruction_parts[0].startswith("You are Gemini CLI")
    # The user's prompt is the last part of the one user turn, after Gemini's session context.
    [turn] = main.body["contents"]
    assert turn["role"] == "user" and turn["parts"][-1] == {"text": "Hi."}
    # Its default model router asks a JSON question first (a side request, no tools).
    [router] = model.side()
    assert router.path.endswith(":generateContent") and not router.tools
    # Headless and at default settings: no tool needing a confirmation is offered, so
    # neither its native memory tool nor a file-writing or shell tool is.
    names = set(gemini_declared(main))
    assert {"read_file", "grep_search", "glob"} <= names
    assert not names & {"save_memory", "write_file", "replace", "run_shell_command"}


def test_gemini_calls_memory_upsert_on_the_real_mcp_server(
    tmp_path: Path, memory_hub: HubProcess
) -> None:
    upsert = mcp("memory_upsert", {"path": "notes/gemini.md", "content": NOTE,
                                   "expected_revision": "absent"})
    with MockModel([upsert, Text("saved")]) as model:
        # Gemini redacts secret-looking variables (AMUX_TOKEN) from an MCP server's
        # environment and never lets `env` set PYTHONPATH: pass the Hub in `env`.
        server = gemini_mcp_server(amux_mcp_argv(), {
            "AMUX_HUB": f"unix:{memory_hub.socket_path}",
            "AMUX_TOKEN": memory_hub.owner_token})
        env = gemini_env(tmp_path, model, {"mcpServers": {"amux": server}})
        done = gemini(["-p", "Save a note."], env, tmp_path / "work")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "saved"
    first, second = model.main()
    tools = gemini_declared(first)
    assert {"mcp_amux_memory_upsert", "mcp_amux_memory_search"} <= set(tools)
    schema = tools["mcp_amux_memory_upsert"]["parametersJsonSchema"]
    assert {"path", "content"} <= set(schema["properties"])
    [result] = model.tool_results("memory_upsert")
    assert not result.is_error and result.request == second.index
    assert result.text.startswith("<untrusted_context>")  # Gemini wraps every MCP result
    status, got = memory_hub.call("/v1/memory/get", {"path": "notes/gemini.md"})
    assert status == 200 and got["content"] == NOTE
    assert got["revision"] in result.text
    # Nothing was added to the user's settings file.
    settings = json.loads((Path(env["HOME"]) / ".gemini" / "settings.json").read_text())
    assert set(settings) == {"security", "mcpServers"}
