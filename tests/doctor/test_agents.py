"""amux/doctor/agents.py: the real pinned agents pass the probe; a missing agent, a help
without a flag and code without a variable are problems that name the fix."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.install import install_hint
from amux.doctor import agents
from tests.peers import npm_bin, peer_env

NAMES = sorted(ADAPTERS)
T = TypeVar("T")


def env_with(directory: Path | str) -> dict[str, str]:
    """This environment with `directory` first on PATH (node and sh stay reachable)."""
    return {**os.environ, "PATH": f"{directory}:/usr/local/bin:/usr/bin:/bin"}


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_agent(directory: Path, name: str, *, without: str) -> Path:
    """A script standing in for agent `name`: its help lists every flag its adapter relies
    on but `without`, its code names every variable and setting."""
    requires = ADAPTERS[name].requires
    help_text = "\n".join(f"  {r.name}  {r.why}" for r in requires
                          if r.kind == "flag" and r.name != without)
    names = " ".join(r.name for r in requires if r.kind != "flag")
    return executable(directory / name, f"""#!/bin/sh
# reads: {names}
case "$*" in
  *--version*) echo "9.9.9" ;;
  *) cat <<'EOF'
Usage: {name} [options]
{help_text}
EOF
  ;;
esac
""")


@pytest.mark.parametrize("name", NAMES)
def test_the_pinned_agent_has_everything_its_adapter_relies_on(name: str,
                                                                tmp_path: Path) -> None:
    seen, findings = agents.check(name, peer_env(name, env_with(npm_bin(name).parent)),
                                  tmp_path / "home")
    assert [f for f in findings if "declares node" not in f.message] == []  # node: its own
    assert seen["found"] and seen["version"]
    assert [r["present"] for r in seen["requirements"]] == [True] * len(ADAPTERS[name].requires)
    assert not (tmp_path / "home").exists()  # read-only: no version cache in a missing home


def test_an_agent_missing_from_path_names_how_to_install_it(tmp_path: Path) -> None:
    seen, findings = agents.check("codex", env_with(tmp_path), tmp_path)
    assert seen == {"name": "codex", "found": False, "path": None, "realpath": None,
                    "version": None, "requirements": []}
    [finding] = findings
    assert finding.severity == "problem" and "not on PATH" in finding.message
    assert finding.fix == install_hint("codex")  # tests/adapters/test_install.py: which


@pytest.mark.parametrize(("name", "flag"), [("claude", "--mcp-config"), ("codex", "app-server"),
                                            ("pi", "--session")])
def test_a_help_without_a_flag_is_a_problem_naming_the_update(name: str, flag: str,
                                                               tmp_path: Path) -> None:
    fake_agent(tmp_path / "bin", name, without=flag)
    seen, findings = agents.check(name, env_with(tmp_path / "bin"), tmp_path / "home")
    assert seen["version"] == "9.9.9"
    [finding] = findings
    assert f"flag {flag}" in finding.message and "9.9.9" in finding.message
    assert finding.fix == install_hint(name)  # the version amux is tested with
    missing = [r["name"] for r in seen["requirements"] if not r["present"]]
    assert missing == [flag]


def test_a_variable_is_searched_in_the_package_and_its_dependencies(tmp_path: Path) -> None:
    modules = tmp_path / "lib" / "node_modules"
    (modules / "@x" / "agent").mkdir(parents=True)
    (modules / "@x" / "agent" / "package.json").write_text(json.dumps(
        {"name": "@x/agent", "optionalDependencies": {"@x/agent-native": "1", "@x/absent": "1"}}))
    script = executable(modules / "@x" / "agent" / "bin" / "agent.js", "#!/usr/bin/env node\n")
    (modules / "@x" / "agent" / "README.md").write_text("ONLY_IN_DOCS\n")
    native = executable(modules / "@x" / "agent-native" / "vendor" / "agent", "\0NATIVE_VAR\0")
    (modules / "@x" / "agent-native" / "package.json").write_text("{}")
    os.link(native, modules / "@x" / "agent-native" / "vendor" / "same")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent").symlink_to(script)
    files = list(agents.installed_code(str(tmp_path / "bin" / "agent")))
    assert files[0] == str(script) and str(native) in files
    assert not any(file.endswith("README.md") for file in files)
    assert agents.search(iter(files), ["NATIVE_VAR", "ONLY_IN_DOCS"]) == {
        "NATIVE_VAR": True, "ONLY_IN_DOCS": False}
    # Out of budget before every file was searched: not told, rather than "missing".
    assert agents.search(iter(files), ["ONLY_IN_DOCS"], budget=1) == {"ONLY_IN_DOCS": None}


def test_a_missing_variable_is_a_problem(tmp_path: Path) -> None:
    fake_agent(tmp_path / "bin", "pi", without="")
    script = tmp_path / "bin" / "pi"
    script.write_text(script.read_text().replace("PI_CODING_AGENT_DIR", "PI_OTHER_DIR"))
    [finding] = agents.check("pi", env_with(tmp_path / "bin"), tmp_path)[1]
    assert "env PI_CODING_AGENT_DIR" in finding.message and "installed code" in finding.message
    assert finding.fix == install_hint("pi")


def test_a_flag_is_a_whole_word_of_the_help() -> None:
    assert agents.in_help((0, "  --session-id <uuid>\n", ""), "--session") is False
    assert agents.in_help((0, "", "  -c, --config <key=value>\n"), "-c") is True
    assert agents.in_help((0, "  resume   Resume a session\n", ""), "resume") is True
    assert agents.in_help(None, "-c") is None


def unblocked(call: Callable[[], T], fifo: Path, seconds: float = 30) -> T:
    """`call()`, failing (not hanging the suite) when it is still waiting on `fifo` after
    `seconds`: a writer then opens and closes the FIFO, so the stuck reader ends."""
    done: list[T] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(seconds)
        pytest.fail(f"still blocked on {fifo} after {seconds} s")
    return done[0]


@pytest.mark.timeout(90)
def test_a_fifo_among_the_code_files_is_skipped_never_waited_on(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "agent"
    (package / "lib").mkdir(parents=True)
    (package / "package.json").write_text('{"name": "agent"}')
    script = executable(package / "bin" / "agent.js", "#!/usr/bin/env node\n")
    fifo = package / "lib" / "a.js"
    os.mkfifo(fifo)
    (package / "lib" / "b.js").write_text("THE_VAR\n")  # searched after the FIFO
    files = list(agents.installed_code(str(script)))
    assert str(fifo) in files
    assert unblocked(lambda: agents.search(iter(files), ["THE_VAR"]), fifo) == {"THE_VAR": True}


@pytest.mark.timeout(90)
def test_a_package_json_that_became_a_fifo_is_skipped_never_waited_on(tmp_path: Path) -> None:
    """Found as a file, then swapped for a FIFO before it is read: no dependencies."""
    os.mkfifo(tmp_path / "package.json")
    assert unblocked(lambda: agents._dependencies(str(tmp_path)), tmp_path / "package.json") == []


@pytest.mark.parametrize(("version", "requires", "expected"), [
    ("v20.20.2", ">=22.0.0", False), ("v20.20.2", ">=20", True), ("v20.20.2", ">=16", True),
    ("v20.20.2", "^20.6.0 || >=22", True), ("v18.0.0", "^20.6.0 || >=22", False),
    ("v20.1.0", "20.x", True), ("v21.1.0", "20.x", False), ("v20.1.0", ">=18 <21", True),
    ("v22.0.0", ">=18 <21", False), ("v20.1.0", "~20.1.0", True),
    ("v20.2.0", "~20.1.0", False), ("v22.19.0", ">=22.19.0", True),
    ("v20.1.0", "latest", None)])
def test_node_ranges_read_as_npm_reads_them(version: str, requires: str,
                                            expected: bool | None) -> None:
    from amux.doctor.agents import satisfies

    assert satisfies(version, requires) is expected


def test_each_agents_node_requirement_is_checked_against_the_node_found() -> None:
    """Claude Code declares node >= 22 and Pi 1.x >= 22.19, and the machine may have 20: the
    doctor says which agent needs what (a note for Claude, which runs here all the same; a
    problem for Pi, which does not start)."""
    import os
    import subprocess

    from amux.doctor.agents import check
    from tests.peers import npm_bin

    env = {**os.environ, "PATH": f"{npm_bin('claude').parent}:{os.environ['PATH']}"}
    node = subprocess.run(["node", "--version"], capture_output=True, text=True,
                          env=env).stdout.strip()
    for name, declared in (("claude", ">=22.0.0"), ("pi", ">=22.19.0")):  # package-lock
        agent, findings = check(name, env, Path("/nonexistent"))
        assert agent["node"]["found"] == node and agent["node"]["requires"] == declared
        said = [f for f in findings if "declares node" in f.message]
        if agent["node"]["satisfied"] is False:
            [finding] = said
            # a note for an agent that runs all the same; Pi 1.x does not start: a problem
            assert finding.severity == ("note" if agent["version"] else "problem")
            assert f"declares node {declared}, and the node on PATH is {node}" in finding.message
            assert finding.fix is not None and "nvm install" in finding.fix
        else:
            assert said == []


def test_pi_1x_on_node_20_is_named_with_the_fix(tmp_path: Path) -> None:
    """The real Pi 1.6.0 with a Node older than its `engines` (>= 22.19) first on PATH: it
    fails at start (it cannot even say its version), and the doctor says which Node it
    needs and how to get it; with the test extra's Node 22 first, nothing is said."""
    import subprocess

    from tests.peers import node22_dir

    pi = npm_bin("pi")
    old = tmp_path / "old-node"
    old.mkdir()
    (old / "node").symlink_to("/usr/bin/node")
    env = {**os.environ, "PATH": f"{old}:{pi.parent}:/usr/bin:/bin"}
    node = subprocess.run(["node", "--version"], capture_output=True, text=True,
                          env=env).stdout.strip()
    if agents.satisfies(node, ">=22.19.0") is not False:
        pytest.skip(f"the machine's node is {node}, which Pi 1.x runs on")
    seen, findings = agents.check("pi", env, tmp_path / "home")
    assert seen["version"] is None  # Pi did not start
    [said] = [f for f in findings if "declares node" in f.message]
    assert f"declares node >=22.19.0, and the node on PATH is {node}" in said.message
    assert said.message.endswith("pi does not start with it") and said.severity == "problem"
    assert [f for f in findings if f is not said and f.severity == "problem"] == []
    assert {r["present"] for r in seen["requirements"] if r["kind"] == "flag"} == {None}
    assert said.fix is not None and "install Node.js 22 or newer" in said.fix
    assert "nvm install 22" in said.fix
    seen, findings = agents.check("pi", {**env, "PATH": f"{node22_dir()}:{env['PATH']}"},
                                  tmp_path / "home")
    assert seen["version"] == "1.6.0"
    assert [f for f in findings if "declares node" in f.message] == []


def test_pi_before_mcp_is_not_asked_for_what_only_the_mcp_route_uses(tmp_path: Path) -> None:
    """The real Pi 0.73.1 (fixtures/npm-old): amux takes its command-line route, so the
    requirements of the MCP route (`since` 0.99.0) are not checked, and nothing is missing."""
    from tests.peers import npm_old_bin

    old = npm_old_bin("pi")
    seen, findings = agents.check("pi", env_with(old.parent), tmp_path / "home")
    assert seen["version"] == "0.73.1"
    assert [f for f in findings if "declares node" not in f.message] == []
    later = [r for r in seen["requirements"] if r["since"]]
    assert {r["name"] for r in later} == {"--session-id", "registerMcpServer",
                                          "systemPromptOptions"}
    assert {r["present"] for r in later} == {None}
    assert all(r["present"] is True for r in seen["requirements"] if not r["since"])
