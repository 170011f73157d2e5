"""The README's set-up commands stay true: the main job launches an agent with memory, CI
runs the test line."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.mockmodel import MockModel, Text, mcp
from tests.mockmodel.agents import codex_config
from tests.peers import node22_dir, npm_bin
from tests.wait import gone

ROOT = Path(__file__).resolve().parents[1]


def _command(marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\s*```sh\n(.+?)\n```", readme, re.S)
    assert found, f"README.md has no command under <!-- {marker} -->"
    return found.group(1)


def test_readme_names_both_commands_and_ci_runs_the_test_line() -> None:
    main = _command("main-command")
    test = _command("test-command")
    assert "npm ci --prefix fixtures/npm" in main and "npm ci --prefix fixtures/npm" in test
    assert main.endswith("amux run fixtures/npm/node_modules/.bin/claude")
    assert test.endswith("python -m pytest")
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def test_the_agent_table_is_each_adapters_own() -> None:
    """Each agent's row says its adapter's one-prompt form and URL form of each API kind."""
    from amux.adapters import ADAPTERS
    from amux.adapters.base import prompt_example

    readme = (ROOT / "README.md").read_text()
    rows = {cells[0]: cells[1:] for cells in (
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in readme.splitlines() if line.startswith("| ") and "`amux run " in line)}
    assert sorted(rows) == sorted(adapter.display_name for adapter in ADAPTERS.values())
    for adapter in ADAPTERS.values():
        example, default, others = rows[adapter.display_name]
        assert example == prompt_example(adapter)
        kinds = list(adapter.endpoint_paths.items())
        assert default.startswith(f"`http://HOST:PORT{kinds[0][1]}`")
        assert ("the server's root" in default) == (kinds[0][1] == "")
        said = {kind: (f"`{path}`" if path else "the root") for kind, path in kinds[1:]}
        assert others == "none" if not said else all(
            f"`{kind}`" in others and form in others for kind, form in said.items())


def test_main_job_launches_a_memory_enabled_agent(tmp_path: Path) -> None:
    """The main command's last two steps, here with `--dry-run` (the real launch of each
    agent is tests/e2e): memory on starts the Hub on demand, and the plan wires memory."""
    claude = npm_bin("claude")
    steps = _command("main-command").split(" && ")
    assert steps[-2] == ".venv/bin/amux system config set memory.enabled true"
    env = {**os.environ, "AMUX_HOME": str(tmp_path / "home")}
    for name in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN"):
        env.pop(name, None)
    amux = [sys.executable, "-m", "amux"]
    try:
        on = subprocess.run([*amux, "system", "config", "set", "memory.enabled", "true"],
                            env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert on.returncode == 0, on.stderr
        plan = subprocess.run([*amux, "run", "--dry-run", str(claude)], env=env,
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert plan.returncode == 0, plan.stderr
        launch = json.loads(plan.stdout)
        assert launch["channel"] == "mcp" and launch["binding"] == "global"
        assert launch["env"] == {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
        assert launch["run_dir"] + "/memory.json" in launch["files"]
        assert launch["run_dir"].endswith("/run/agents/" + launch["session"])
    finally:
        subprocess.run([*amux, "hub", "stop"], env=env, capture_output=True, timeout=60)


def test_benchmark_command_runs(tmp_path: Path) -> None:
    """`python -m benchmarks --quick` (the benchmark command, few repetitions), without
    the real agents' launch rounds (two minutes of five Node CLIs: the next test runs that
    bench alone, on two agents)."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--agent-rounds", "0", "--json",
         str(report), "--dir", str(tmp_path / "corpus")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["machine"]["rg"].startswith("ripgrep"), "rg (the floor) must be installed"
    assert data["corpus"]["documents"] == 1024
    assert {"hub", "mcp", "launch"} <= data.keys()


def test_the_agent_launch_bench_runs(tmp_path: Path) -> None:
    """One round of the real-agent launch bench, bare agent against `amux run`."""
    report = tmp_path / "agents.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.agent_launch_bench", "--rounds", "1",
         "--profile-runs", "0", "--agents", "claude,pi", "--no-isolated", "--json",
         str(report)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "amux run` launch overhead, pi" in done.stdout
    assert report.read_text()


def test_the_write_parts_bench_runs(tmp_path: Path) -> None:
    """`python -m benchmarks.write_parts`, small: every variant of every size measured (it
    switches store parts off by name, so a renamed part fails here, not in a later run)."""
    report = tmp_path / "parts.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.write_parts", "--runs", "3", "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    for size in ("3 KiB", "64 KiB", "60 KiB + 1 line"):
        assert set(data["parts"][size]) == {"floor", "full", "no guard", "no revision hash",
                                            "no keep link", "no history", "bytes", "bare"}
        assert data["parts"][size]["floor"]["ratio"] == 1
    assert data["overlap"]["work beside the fsync"] > 0
    assert "| bare |" in done.stdout


def test_the_import_bench_runs(tmp_path: Path) -> None:
    """`python -m benchmarks.import_bench`, small: every row measured, against git."""
    report = tmp_path / "import.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.import_bench", "--notes", "20", "--rounds", "1",
         "--json", str(report), "--markdown"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    assert set(data["ms"]) == {"dry_run", "apply", "apply_again", "export", "git_commit",
                               "git_push", "git_pull"}
    assert "| floor: `git add -A && git commit` |" in done.stdout


def test_the_sync_bench_runs(tmp_path: Path) -> None:
    """`python -m benchmarks.sync_bench`, small: two Hubs synced, against git."""
    report = tmp_path / "sync.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.sync_bench", "--documents", "20", "--rounds", "1",
         "--json", str(report), "--markdown"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    assert set(data["ms"]) == {"sync_send", "sync_receive", "git_commit", "git_push",
                               "git_pull"}
    assert "| floor: `git pull` (into a clone) |" in done.stdout


def test_the_scale_bench_runs(tmp_path: Path) -> None:
    """`python -m benchmarks.scale`, small: real MCP sessions, raw clients (over TLS too)
    and both listeners at their cap, with the search process measured beside the Hub."""
    report = tmp_path / "scale.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--sessions", "4", "--seconds", "4",
         "--raw", "20", "--json", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    row = data["sessions"][0]
    assert (row["started"], row["errors"], row["unavailable_at_start"]) == (4, {}, 0)
    assert row["memory_search"]["n"] and row["memory_get"]["n"]
    assert row["together_peak_pss_mb"] > row["hub_peak_rss_mb"] / 2
    assert data["raw"]["all_served"] == 20 and data["raw_tls"]["all_served"] == 20
    assert data["at_cap"]["refused_client_read"] == "hub_busy"
    assert data["at_cap_tls"]["refused_client_read"] == "hub_busy"
    assert "| 4 |" in done.stdout


def test_installing_amux_as_a_tool_works_as_written(tmp_path: Path) -> None:
    """The README's pipx and uv lines, as written from the checkout with a fresh home (each
    builds amux and fetches its dependencies from the package index); the installed
    `amux` runs in between, and the uninstalls leave no `amux` in ~/.local/bin."""
    lines = [line.split("#")[0].strip() for line in _command("tool-install").splitlines()]
    assert lines[0] == "pipx install ." and "uv tool install ." in lines
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AMUX_", "XDG_", "PIPX_", "UV_", "VIRTUAL_ENV"))}
    env.update({"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"})
    for line in lines:
        done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        if "--version" in line:
            assert done.stdout.startswith("amux "), done.stdout
            missing = subprocess.run(  # no checkout beside it: the pinned npm install
                [str(home / ".local" / "bin" / "amux"), "run", "qwen"], cwd=home,
                env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                timeout=60, stdin=subprocess.DEVNULL)
            assert "npm install -g @qwen-code/qwen-code@0.24.4;" in missing.stderr, missing.stderr
        if line == "uv tool install .":
            assert (home / ".local" / "bin" / "amux").exists()
    assert not (home / ".local" / "bin" / "amux").exists()


EXIT = re.compile(r"\(exit (\d+)\)")
SETUP = ("main-command", "test-command", "tool-install", "uninstall", "uninstall-remove")


def shell_examples() -> list[str]:
    """Every line of every `sh` block of the README but the set-up commands, the tool
    installs and the uninstall (each tested on its own), in order."""
    readme = (ROOT / "README.md").read_text()
    lines: list[str] = []
    for found in re.finditer(r"(<!-- ([\w-]+) -->\s*)?```sh\n(.+?)\n```", readme, re.S):
        if found.group(2) not in SETUP:
            lines += [line for line in found.group(3).splitlines()
                      if line.strip() and not line.lstrip().startswith("#")]
    return lines


def test_every_shell_example_runs_as_written(tmp_path: Path) -> None:
    """The README's examples, line by line in one shell as a user types them after the main
    command: from the checkout, a fresh home, no AMUX_* variable, the local default Hub.
    Only the model is scripted: the user's own Claude login is a key for it, and it stands in
    for the local Ollama the `--endpoint` example names (127.0.0.1:11434). Each line exits
    0, or the status its comment states ("(exit 7)")."""
    lines = shell_examples()
    assert any("--endpoint http://127.0.0.1:11434/v1" in line for line in lines)
    for agent in ("claude", "codex", "pi"):
        npm_bin(agent)
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AMUX_", "XDG_", "ANTHROPIC_", "OPENAI_", "CODEX_",
                                  "CLAUDE_", "PI_"))}
    env.update({"HOME": str(home), "ANTHROPIC_BASE_URL": "http://127.0.0.1:11434",
                "ANTHROPIC_API_KEY": "sk-the-users-own",
                "PATH": f"{node22_dir()}:{env['PATH']}"})  # Node >= 22.19, as the README says
    statuses = tmp_path / "statuses"
    script = "".join(f"{line}\necho \"$?\" >> {statuses}\n" for line in lines)
    search = mcp("memory_search", {"query": "build"})
    story = [[search, Text("You use pytest.")], [Text("Tests run with pytest.")],
             [search, Text("You use pytest.")]]
    try:
        with MockModel(*story, port=11434) as model:
            done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, timeout=600,
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
        health = subprocess.run(["bash", "-c", f"{lines[0]}\namux memory doctor --json"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    except OSError as error:  # someone's real Ollama
        pytest.fail(f"127.0.0.1:11434 is taken ({error}): stop the server there to run this")
    finally:
        subprocess.run(["bash", "-c", f"{lines[0]}\namux hub stop"], cwd=ROOT, env=env,
                       capture_output=True, timeout=60)
    assert json.loads(health.stdout)["findings"] == []  # the examples model the conventions
    got = [int(value) for value in statuses.read_text().split()]
    expected = [int(m.group(1)) if (m := EXIT.search(line)) else 0 for line in lines]
    report = "\n".join(f"{g} (expected {e}): {line}" for line, g, e in
                       zip(lines, got, expected, strict=True) if g != e)
    assert got == expected, f"{report}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "You use pytest." in done.stdout and "Tests run with pytest." in done.stdout
    assert [r.conversation for r in model.main() if r.reply is not None][:1] == [0]
    assert all(r.body.get("model") == "qwen3" for r in model.main() if r.api == "responses")


VARYING = re.compile(r"(\d{8}-\d{6}-[0-9a-f]{6}|after \d+\.\d s)")  # session ids, durations


def first_session() -> list[tuple[str, list[str], bool]]:
    """The README's "A first session": each `$ command` of its transcripts, the lines shown
    after it, and whether some output is elided (a `…` line)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## A first session"):]
    section = section[:section.index("\n## ")]
    steps: list[tuple[str, list[str], bool]] = []
    for block in re.finditer(r"```text\n(.+?)\n *```", section, re.S):
        for line in textwrap.dedent(block.group(1)).splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], [], False))
            elif line.startswith("…"):
                steps[-1] = (*steps[-1][:2], True)
            else:
                steps[-1][1].append(line)
    return steps


def _shown(line: str) -> re.Pattern[str]:
    """A line as the README shows it, its session ids and durations standing for any."""
    parts = VARYING.split(line)
    return re.compile("".join(VARYING.pattern if i % 2 else re.escape(part)
                              for i, part in enumerate(parts)))


def _in_order(patterns: list[re.Pattern[str]], lines: list[str]) -> bool:
    rest = iter(lines)
    return all(any(pattern.fullmatch(line) for line in rest) for pattern in patterns)


def test_the_first_session_runs_as_shown(tmp_path: Path) -> None:
    """The README's first session, command by command as a user types them in a project:
    a fresh home, the set-up's PATH, memory on, no AMUX_* variable, Claude Code with the
    user's key and Codex with the user's own provider in ~/.codex/config.toml, both at
    the scripted model. The search prints exactly the table shown; each agent run shows
    the lines shown, in order (the agent's answer, amux's closing line)."""
    steps = first_session()
    assert [command.split()[:3] for command, _, _ in steps] == [
        ["amux", "run", "claude"], ["amux", "memory", "search"], ["amux", "run", "codex"]]
    export = shell_examples()[0]  # typed in the checkout, then the user goes to a project
    assert export.startswith("export PATH=")
    for agent in ("claude", "codex"):
        npm_bin(agent)
    home = tmp_path / "home"
    project = tmp_path / "demo"
    (home / ".codex").mkdir(parents=True)
    project.mkdir()
    for git in (["init", "-q"], ["remote", "add", "origin", "https://github.com/acme/demo.git"]):
        subprocess.run(["git", *git], cwd=project, check=True, timeout=30)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AMUX_", "XDG_", "ANTHROPIC_", "OPENAI_", "CODEX_",
                                  "CLAUDE_", "PI_"))}
    topic = "projects/github.com-acme-demo/decisions.md"
    index = "# Memory\n- Demo project: build and test decisions in " + topic + "\n"
    note = ("---\nname: demo-build\ndescription: how the demo project builds and tests\n"
            "metadata:\n  type: reference\n---\nUse pytest.\n")
    saved, answer = (steps[0][1][0], steps[2][1][0])

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        script = f"cd {shlex.quote(str(ROOT))}\n{export}\ncd {shlex.quote(str(project))}\n"
        return subprocess.run(["bash", "-c", script + command], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=180)

    with MockModel(
        [mcp("memory_get", {"path": "MEMORY.md"}),
         mcp("memory_upsert", {"path": topic, "content": note, "expected_revision": "absent"}),
         mcp("memory_upsert", {"path": "MEMORY.md", "content": index,
                               "expected_revision": "absent"}),
         Text(saved)],
        [mcp("memory_search", {"query": "tests"}), mcp("memory_get", {"path": topic}),
         Text(answer)],
    ) as model:
        (home / ".codex" / "config.toml").write_text(codex_config(model))
        env.update({"HOME": str(home), "ANTHROPIC_BASE_URL": model.url,
                    "ANTHROPIC_API_KEY": "sk-the-users-own", "MOCK_API_KEY": "sk-the-users-own"})
        try:
            on = shell("amux system config set memory.enabled true")
            assert on.returncode == 0, on.stdout
            for command, shown, elided in steps:
                done = shell(command)
                assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}"
                lines = done.stdout.splitlines()
                if elided:
                    assert _in_order([_shown(line) for line in shown], lines), (
                        f"{command}: the README shows\n" + "\n".join(shown)
                        + f"\n...but it printed\n{done.stdout[-3000:]}")
                else:
                    assert lines == shown, f"{command}:\n{done.stdout}"
            health = shell("amux memory doctor --json")
        finally:
            shell("amux hub stop")
    results = model.tool_results()
    assert [r.call.name for r in results] == ["memory_get", "memory_upsert", "memory_upsert",
                                         "memory_search", "memory_get"]
    assert not any(r.is_error for r in results), results
    assert topic in results[3].text and "Use pytest." in results[4].text
    assert json.loads(health.stdout)["findings"] == []


def test_undoing_a_bad_write_runs_as_shown(tmp_path: Path) -> None:
    """The README's "Undoing a bad write", command by command after an agent's bad update
    of MEMORY.md: the log lists the update then the create, the diff is the one shown (its
    revisions aside), and the restore brings the first version back."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Undoing a bad write"):]
    section = section[:section.index("\n## ")]
    transcript = re.search(r"```text\n(.+?)\n```", section, re.S)
    assert transcript
    steps: list[tuple[str, list[str]]] = []
    for line in transcript.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    assert [command.split()[:3] for command, _ in steps] == [
        ["amux", "memory", "log"], ["amux", "memory", "diff"], ["amux", "memory", "restore"]]
    export = shell_examples()[0]
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env["HOME"] = str(home)

    def shell(command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f"{export}\n{command}"], cwd=ROOT, env=env,
                              input=stdin, capture_output=True, text=True, timeout=120)

    good = ("# Memory\n- Demo project: build and test decisions in "
            "projects/github.com-acme-demo/decisions.md\n")
    try:
        assert shell("amux system config set memory.enabled true").returncode == 0
        first = json.loads(shell("amux memory upsert MEMORY.md --expected-revision absent",
                                 good).stdout)["revision"]
        bad = shell(f"amux memory upsert MEMORY.md --expected-revision {first}",
                    "# Memory\n- Demo project: uses unittest\n")
        assert bad.returncode == 0, bad.stderr
        outputs = []
        for command, _ in steps:
            done = shell(command)
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            outputs.append(done.stdout)
    finally:
        shell("amux hub stop")
    log = [line.split()[1:4] for line in outputs[0].splitlines() if "MEMORY.md" in line]
    assert log == [line.split()[1:4] for line in steps[0][1] if "MEMORY.md" in line]
    assert outputs[1].splitlines() == steps[1][1]  # revisions are the contents' own
    restored = json.loads(outputs[2])
    assert restored["revision"] == restored["restored_from"] == first
    assert f'"revision":"{first[:12]}…"' in steps[2][1][0]


def test_uninstalling_as_written_stops_everything_and_leaves_nothing(tmp_path: Path) -> None:
    """The README's uninstall after a user's day (memory on, a note, a setting, the memory
    page open): its commands stop the page and the Hub, and what it says stays on disk is
    all there was (amux's home and the settings file), which its removal line removes."""
    export = shell_examples()[0]
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AMUX_", "XDG_"))}
    env["HOME"] = str(home)

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f"{export}\n{command}"], cwd=ROOT, env=env,
                              input="a note\n", capture_output=True, text=True, timeout=120)

    for command in ("amux system config set memory.enabled true",
                    "amux memory upsert notes/a.md --expected-revision absent",
                    "amux settings set agents.pi.memory false", "amux ui --no-open"):
        assert shell(command).returncode == 0, command
    pids = [json.loads(shell(status).stdout)["pid"]
            for status in ("amux hub status", "amux ui status --json")]
    try:
        for marker in ("uninstall", "uninstall-remove"):
            for line in _command(marker).splitlines():
                done = shell(line)
                assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            if marker == "uninstall":
                assert all(gone(pid) for pid in pids)
                data = home / ".local" / "share" / "amux"
                said = re.search(r"What stays on disk(.+?)\n\n", (ROOT / "README.md").read_text(),
                                 re.S)
                assert said
                for entry in os.listdir(data):
                    assert f"`{entry}" in said.group(1), f"the README does not name {entry}"
        assert not (home / ".local" / "share" / "amux").exists()
        assert not (home / ".config" / "amux").exists()
    finally:
        shell("amux ui stop; amux hub stop")
