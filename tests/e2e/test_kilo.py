"""The real Kilo Code CLI 7.7.7 through the real `python -m amux run kilo -- run …`, against
the scripted model, on a real Hub.

Only the model is scripted (tests/mockmodel); Kilo, the launcher, `amux memory mcp` and the
Hub are real. The user has a config of their own: the mock provider and an instruction file
in their own `KILO_CONFIG_CONTENT` (which amux must merge into, not replace), a global
`kilo.json` with an MCP server of theirs and `permission: {"*": "ask"}`, a project
`AGENTS.md`, and Kilo Memory switched on for the project with one fact in it (as its user
does, through `kilo serve` and `POST /memory/enable`). The offline settings of `kilo_env`
are the sandbox's (no internet here), not amux's. Requests without tools (Kilo's title and
memory-capture requests) are side requests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

from amux.client.tools import TOOLS
from tests.agentstores import enable_kilo_memory
from tests.e2e.story import (
    PROJECT_RULE,
    USER_RULE,
    amux_run,
    bounded,
    chat_tools,
    check_opencode_family_story,
    opencode_family_user,
    opencode_is_side,
    opencode_system_text,
    sessions,
)
from tests.hubproc import HubProcess
from tests.isolation.world import World, user_a
from tests.mockmodel import MockModel, Text, ToolCall
from tests.mockmodel.agents import kilo_env, opencode_provider
from tests.peers import npm_bin

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"
NATIVE_FACT = "KILO-NATIVE-FACT: the build uses make."
UPSERT = ToolCall("amux_memory_upsert", {"path": PATH, "content": FACT,
                                         "expected_revision": "absent"})
SEARCH = ToolCall("amux_memory_search", {"query": "tabs"})
AMUX_TOOLS = [f"amux_{tool['name']}" for tool in TOOLS]
KILO_MEMORY_TOOLS = {"kilo_memory_save", "kilo_memory_recall"}
TOKEN = re.compile(r"amux_[A-Za-z0-9_-]{43}")


def user_setup(root: Path, model: MockModel) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    return opencode_family_user(root, model, "kilo", "https://app.kilo.ai/config.json", kilo_env)


def snapshot(*roots: Path) -> dict[str, bytes]:
    """The user's own files: every file under `roots` but Kilo's `.gitignore` and
    migration marker in its config directory."""
    return {str(path): path.read_bytes() for root in roots for path in sorted(root.rglob("*"))
            if path.is_file() and path.name not in (".gitignore", ".bash-permission-migrated")}


def test_kilo_saves_recalls_and_resumes_through_amux(memory_hub: HubProcess,
                                                     tmp_path: Path) -> None:
    """(1) the protocol follows the user's AGENTS.md and their own config's instruction file,
    and the five tools come with their schemas beside the user's server; (2) Kilo Memory is
    on for the project (a plain `kilo run`, the control, gets its tools and its fact), and
    off in every amux launch, the user's setting kept; (3) a fact saved in one session lands
    in the Hub and a new session finds it, under the user's `"*": "ask"`; (4) resuming the
    first amux session continues the same Kilo session with a byte-identical system
    message; the user's files are untouched."""
    kilo = str(npm_bin("kilo"))
    with MockModel([Text("Plain.")], [UPSERT, Text("Saved.")],
                   [SEARCH, Text("You indent with tabs.")], [Text("Resumed.")],
                   is_side=opencode_is_side) as model:
        env, work = user_setup(tmp_path, model)
        native = enable_kilo_memory(env, work, NATIVE_FACT)
        before = snapshot(tmp_path / "home" / ".config", work, tmp_path / "user-rules.md")
        control = bounded([kilo, "run", "Hi."], env, work)
        assert control.returncode == 0, control.stderr[-3000:]
        launches = len(model.requests)  # from here on, amux's launches'
        amux_run(memory_hub, env, work, kilo, "--", "run", "Remember: I indent with tabs.")
        amux_run(memory_hub, env, work, kilo, "--", "run", "How do I indent?")
        first, second = sessions(memory_hub.home)
        resumed = amux_run(memory_hub, env, work, "--resume", first["id"], "--", "run",
                           "--format", "json", "Still there?")
    plain, *main = model.main()
    # (2) The control: Kilo Memory's tools and its fact; amux's launches: neither, and no
    # capture (Kilo's consolidation request, sent after a turn that asks to remember).
    assert set(chat_tools(plain)) >= KILO_MEMORY_TOOLS
    assert NATIVE_FACT in opencode_system_text(plain)
    assert "amux memory protocol" not in opencode_system_text(plain)
    for request in main:
        assert not KILO_MEMORY_TOOLS & set(chat_tools(request))
        assert NATIVE_FACT not in json.dumps(request.body)
        assert "Kilo memory blocks" not in opencode_system_text(request)
    # (the control, Kilo Memory on, may send its own capture after "Hi.": not amux's)
    assert not [r for r in model.side()
                if r.index >= launches and "memory" in opencode_system_text(r).lower()]
    assert json.loads(native["state"].read_text())["enabled"] is True  # the user's setting
    assert sorted(p.name for p in native["root"].parent.iterdir()) == [native["root"].name]
    # Kilo's data directory was lent through a mirror, gone after each launch.
    assert not [p for state in (first, second)
                for p in (memory_hub.home / "sessions" / state["id"]).glob("kilo-data*")]
    # (1) Kilo's own prompt, the user's, the protocol file; (3) saved despite the user's
    # ask rule, found by the next session; (4) each session's Kilo id learnt from the
    # plugin's file, the resume continuing the first.
    again = check_opencode_family_story(
        memory_hub, model, main, first, second, resumed, greeting="You are Kilo",
        instructions="kilo-instructions.md", rules=(PROJECT_RULE, USER_RULE), saved=FACT)
    assert "Still there?" in json.dumps(again.body["messages"][-1])
    # The user's own config, instruction and project files were not touched.
    assert snapshot(tmp_path / "home" / ".config", work, tmp_path / "user-rules.md") == before


def test_kilo_without_memory_and_with_the_hub_down(hub: HubProcess, tmp_path: Path) -> None:
    """(5) memory off on the Hub: no tools, no protocol, Kilo still answers, and Kilo Memory
    stays the user's (on: its tools are there); (6) the Hub unreachable: the same, with a
    warning naming why."""
    kilo = str(npm_bin("kilo"))
    with MockModel([Text("Off.")], [Text("Down.")], is_side=opencode_is_side) as model:
        env, work = user_setup(tmp_path, model)
        enable_kilo_memory(env, work, NATIVE_FACT)
        off = amux_run(hub, env, work, kilo, "--", "run", "Hi.")  # memory.enabled false
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, kilo, "--",
                        "run", "Hi again.")
    assert "memory.enabled = false" in off.stderr
    assert "hub_unreachable" in down.stderr
    assert off.stdout.strip() == "Off." and down.stdout.strip() == "Down."
    for request in model.main():
        assert not set(AMUX_TOOLS) & set(chat_tools(request))
        assert "amux memory protocol" not in opencode_system_text(request)
        assert USER_RULE in opencode_system_text(request)  # the user's own config applies
        assert set(chat_tools(request)) >= KILO_MEMORY_TOOLS  # and their own Kilo Memory
    assert all(state["agent_session"] for state in sessions(hub.home))


def live_tokens(hub: HubProcess) -> int:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    return sum(token["kind"] != "login" for p in principals for token in p["tokens"])


def tree(root: int) -> list[int]:
    """`root` and every process under it."""
    try:
        return [root, *(child.pid for child in psutil.Process(root).children(recursive=True))]
    except psutil.NoSuchProcess:
        return [root]


def test_the_token_never_reaches_kilos_tree_and_is_revoked_after(memory_hub: HubProcess,
                                                                 tmp_path: Path) -> None:
    """(7) While Kilo runs (the model holds its answer back), no process of the launch's
    tree but amux's own MCP server child… has a token in its environment or arguments: the
    MCP server reads it from the connection config, whose path alone Kilo is given; the
    session's token is live then and revoked once the launch ends."""
    kilo = str(npm_bin("kilo"))
    before = live_tokens(memory_hub)
    seen: dict[str, Any] = {}
    with MockModel([ToolCall("amux_memory_search", {"query": "tabs"}, delay=4.0),
                    Text("Done.")], is_side=opencode_is_side) as model:
        env, work = user_setup(tmp_path, model)
        argv = [sys.executable, "-m", "amux", "run", kilo, "--", "run", "Search."]
        process = subprocess.Popen(argv, env={**env, "AMUX_HOME": str(memory_hub.home)},
                                   cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)

        def watch() -> None:
            model.wait_for(lambda request: bool(request.tools), timeout=120)
            seen["tokens"] = live_tokens(memory_hub)
            leaks = []
            for pid in tree(process.pid):
                for name in ("environ", "cmdline"):
                    try:
                        text = Path(f"/proc/{pid}/{name}").read_bytes().decode(errors="replace")
                    except OSError:
                        continue
                    if TOKEN.search(text) or "AMUX_TOKEN" in text:
                        leaks.append((pid, name))
            seen["leaks"], seen["pids"] = leaks, len(tree(process.pid))

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            out, err = process.communicate(timeout=180)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
            watcher.join(130)
    assert process.returncode == 0, err[-3000:]
    assert out.strip() == "Done."
    assert seen["pids"] > 2 and seen["leaks"] == [], seen
    assert seen["tokens"] == before + 1  # the session's own, live while Kilo ran
    assert live_tokens(memory_hub) == before  # revoked
    home = tmp_path / "home"
    assert not any(TOKEN.search(path.read_bytes().decode(errors="replace"))
                   for path in home.rglob("*") if path.is_file()
                   and path.stat().st_size < 5_000_000)


def test_kilo_reaches_an_endpoint_with_a_key_it_reads_itself(memory_hub: HubProcess,
                                                             tmp_path: Path) -> None:
    """`--endpoint` on a home with no provider: Kilo substitutes `{env:VAR}` from its own
    environment, so the key reaches the server but no argv, plan or state holds it."""
    secret = "sk-endpoint-" + "7" * 20
    with MockModel([Text("From the endpoint.")], is_side=opencode_is_side) as model:
        env = kilo_env(tmp_path, model)
        del env["KILO_CONFIG_CONTENT"]  # no provider of the user's: the endpoint's only
        env["MY_ENDPOINT_KEY"] = secret
        done = amux_run(memory_hub, env, tmp_path / "work", "--endpoint", model.base_url,
                        "--model", "served-model", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                        str(npm_bin("kilo")), "--", "run", "Hi.")
    assert done.stdout.strip() == "From the endpoint."
    [request] = model.main()
    assert request.headers["authorization"] == f"Bearer {secret}"
    assert request.body["model"] == "served-model"
    [state] = sessions(memory_hub.home)
    assert state["agent_session"] and secret not in json.dumps(state)


def test_kilo_runs_isolated_as_another_user(world: World) -> None:
    """`amux run --as-user`: Kilo as the target, with the target's own config (the
    launcher's is never passed on); its session id is learnt and its memory call lands in
    the Hub under the target's principal."""
    kilo = npm_bin("kilo")
    assert os.stat(kilo.resolve()).st_mode & 0o005 == 0o005
    a = user_a(world)
    entry = world.users[a]
    upsert = ToolCall("amux_memory_upsert", {"path": "notes/kilo.md",
                                             "content": "from kilo\n",
                                             "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")], is_side=opencode_is_side) as model:
        config = Path(entry.pw_dir) / ".config" / "kilo"  # provisioned for A explicitly
        config.mkdir(parents=True)
        (config / "kilo.json").write_text(json.dumps(opencode_provider(model)))
        for path in (config.parent, config, config / "kilo.json"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        done = world.launch(a, str(kilo), "run", "Remember.", env={
            "KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_TELEMETRY_LEVEL": "off", "npm_config_offline": "true",
            "KILO_CONFIG_CONTENT": '{"model": "launcher/its-own"}'})  # never A's
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("amux_memory_upsert")
    assert not result.is_error, result.text
    assert (world.scope_dir(a) / "notes" / "kilo.md").read_text() == "from kilo\n"
    [state] = sessions(world.hub.home)
    assert state["as_user"] == a and state["agent_session"].startswith("ses_")
    assert model.main()[0].headers["x-session-id"] == state["agent_session"]
    assert "amux memory protocol" in opencode_system_text(model.main()[0])
