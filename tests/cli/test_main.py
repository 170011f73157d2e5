"""The installed `amux` console script: version, help of every command group, typos."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from amux import __version__
from amux.client.cli import COMMANDS
from tests.cli.script import console

GROUPS = ["memory", "hub", "system", "system config", "system secrets", "principal",
          "protocol", "protocol show", "sessions", "eval", "run", "doctor"]


def test_console_script_reports_its_version(tmp_path: Path) -> None:
    done = console(tmp_path, "--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"amux {__version__}")


@pytest.mark.parametrize("group", GROUPS)
def test_every_command_group_has_its_own_help(group: str, tmp_path: Path) -> None:
    done = console(tmp_path, *group.split(), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: amux {group} "), done.stdout
    assert not (tmp_path / "amux").exists()  # help never starts a Hub


def test_the_top_level_help_lists_every_command(tmp_path: Path) -> None:
    for args in ((), ("--help",), ("-h",)):
        done = console(tmp_path, *args)
        assert done.returncode == 0
        listed = [line.strip().split("  ")[0] for line in done.stdout.splitlines()
                  if line.startswith("  ") and line.strip()]
        for name in COMMANDS:
            assert f"memory {name}" in listed
        for command in ("doctor", "sessions list|show ID|prune", "protocol show [--mcp|--cli]",
                        "system config get|set", "system secrets allow|remove|list",
                        "hub serve|start|stop|status|reload", "eval live"):
            assert command in listed, command
        assert any(line.startswith("run ") for line in listed)
        words = " ".join(done.stdout.split())
        assert "doctor check the set-up: Hub, connection, agents, memory health" in words


def test_a_typo_suggests_the_closest_in_one_line(tmp_path: Path) -> None:
    """A typo gets one line naming the closest command (it was followed by 40 lines of
    help); only a word close to nothing gets the command list."""
    done = console(tmp_path, "memroy", "search", "x")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "invalid_argument"
    assert done.stderr.splitlines() == [
        "amux: invalid_argument: unknown command 'memroy'; did you mean `amux memory`?"]
    done = console(tmp_path, "system", "confg", "get", "memory.enabled")
    assert done.returncode == 2 and "did you mean `amux system config`?" in done.stderr
    done = console(tmp_path, "memory", "serch", "x")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "amux memory: invalid_argument: unknown command 'serch'; did you mean "
        "`amux memory search`?"]
    done = console(tmp_path, "--bogus")
    assert done.returncode == 2 and "unknown option '--bogus'" in done.stderr
    assert "did you mean" not in done.stderr
    assert "commands:" in done.stderr.splitlines()
    assert not (tmp_path / "amux").exists()


def test_a_typo_of_an_agent_names_the_agent_meant(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    done = console(tmp_path / "amux", "run", "claud", env={
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "amux run: invalid_argument: agent 'claud' not found; did you mean `amux run claude`?"]


def test_usage_errors_name_the_command_once(tmp_path: Path) -> None:
    cases = {("memory", "show"): "amux memory show: invalid_argument: the following "
             "arguments are required: path",
             ("memory", "search", "x", "--bogus"): "amux memory: invalid_argument: "
             "unrecognized arguments: --bogus",
             ("protocol", "show", "--bogus"): "amux protocol show: invalid_argument: "
             "unrecognized arguments: --bogus",
             ("hub", "bogus"): "amux hub: invalid_argument: argument COMMAND: invalid "
             "choice: 'bogus' (choose from 'serve', 'start', 'stop', 'status', 'reload')"}
    for args, line in cases.items():
        done = console(tmp_path, *args, env={"AMUX_HUB": "unix:/nonexistent", "AMUX_TOKEN": "t"})
        assert (done.returncode, done.stderr) == (2, line + "\n"), args
        message = json.loads(done.stdout)["error"]["message"]
        assert not message.startswith("amux"), message


def test_every_subcommand_help_says_what_it_does(tmp_path: Path) -> None:
    """`amux hub stop --help` showed only its usage and -h."""
    for command in (("hub", "start"), ("hub", "stop"), ("hub", "status"), ("hub", "reload"),
                    ("hub", "serve"), ("sessions", "list"), ("sessions", "show"),
                    ("sessions", "prune")):
        done = console(tmp_path, *command, "--help")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"usage: amux {' '.join(command)}")
        about = done.stdout.split("\n\n")[1]  # after the usage, before the options
        assert about and not about.startswith("options"), (command, done.stdout)
    memory = console(tmp_path, "memory", "--help").stdout
    assert "SPEC" not in memory and "docs/wire.md" in memory


def test_a_word_of_another_group_names_the_command_meant(tmp_path: Path) -> None:
    """`amux search`, `amux log` and `amux claude` printed the whole help, and `amux hub
    stat` suggested `start`: the memory commands and the agents come from their own
    tables, and a word a command begins with beats edit distance."""
    for args, meant in ((("search", "pytest"), "amux memory search"),
                        (("log", "MEMORY.md"), "amux memory log"), (("claude",), "amux run claude"),
                        (("cladue",), "amux run claude"), (("mem", "list"), "amux memory")):
        done = console(tmp_path, *args)
        assert done.returncode == 2, args
        assert done.stderr.splitlines() == [
            f"amux: invalid_argument: unknown command '{args[0]}'; did you mean `{meant}`?"]
    done = console(tmp_path, "hub", "stat")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "amux hub: invalid_argument: unknown command 'stat'; did you mean `amux hub status`?"]
    assert not (tmp_path / "amux").exists()
