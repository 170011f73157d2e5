"""Codex's effective `developer_instructions` (amux/adapters/codex_layers.py), read through
a fake `Probe`: Codex's own answer to `config/read`, the profile put where Codex puts it,
and the files read as Codex 0.171 reads them when the app-server cannot answer. The real
Codex is asked in tests/e2e/test_codex.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amux.adapters import ADAPTERS
from tests.adapters.test_hooks import FakeProbe

CODEX = "/opt/codex/bin/codex"
HOME = "/c"
REPO = "/work/repo"
APP_SERVER = (CODEX, "app-server")
GIT = ("git", "-C", f"{REPO}/sub", "rev-parse", "--path-format=absolute", "--show-toplevel",
       "--git-common-dir", "--show-prefix")


def layer(kind: str, value: str | None, disabled: str | None = None,
          **name: Any) -> dict[str, Any]:
    return {"name": {"type": kind, **name}, "config": {"developer_instructions": value},
            "version": "sha256:x", "disabledReason": disabled}


def answer(*layers: dict[str, Any]) -> tuple[int, str, str]:
    """`codex app-server` answering initialize, then config/read with `layers`."""
    lines = [{"id": 0, "result": {"userAgent": "amux/0.171.0", "codexHome": HOME}},
             {"method": "configWarning", "params": {"summary": "no bubblewrap"}},
             {"id": 1, "result": {"config": {}, "origins": {}, "layers": list(layers)}}]
    return 0, "".join(json.dumps(line) + "\n" for line in lines), ""


PROJECT = layer("project", "Project rules.", dotCodexFolder=f"{REPO}/.codex")
USER = layer("user", "User rules.", file=f"{HOME}/config.toml", profile=None)
SYSTEM = layer("system", None, file="/etc/codex/config.toml")


def instructions(args: tuple[str, ...], commands: dict[tuple[str, ...], tuple[int, str, str]],
                 files: dict[str, str] | None = None, executable: str | None = CODEX,
                 ) -> tuple[tuple[str, ...], FakeProbe]:
    probe = FakeProbe(files or {}, env={"CODEX_HOME": HOME}, cwd=f"{REPO}/sub",
                      commands=commands, executable=executable)
    return ADAPTERS["codex"].user_instructions(args, probe), probe


def test_a_trusted_projects_layer_outranks_config_toml() -> None:
    """Before, amux read config.toml only, and its `-c` then replaced the project's text."""
    got, probe = instructions(("exec", "hi"), {APP_SERVER: answer(PROJECT, USER, SYSTEM)})
    assert got == ("Project rules.",) and probe.warnings == []
    [(argv, stdin)] = probe.ran
    assert argv == APP_SERVER
    sent = [json.loads(line) for line in stdin.splitlines()]
    assert [m["method"] for m in sent] == ["initialize", "initialized", "config/read"]
    assert sent[2]["params"] == {"cwd": f"{REPO}/sub", "includeLayers": True}
    # A `-c developer_instructions=` of the user's outranks every layer: nothing to ask
    # (`plan` takes the flag's own text).
    got, probe = instructions(("-c", 'developer_instructions="Mine."', "exec"),
                              {APP_SERVER: answer(PROJECT, USER, SYSTEM)})
    assert got == () and probe.ran == []


def test_layers_codex_does_not_load_are_skipped() -> None:
    untrusted = layer("project", "Untrusted.", "To load project-local config, add it as a "
                      "trusted project", dotCodexFolder=f"{REPO}/.codex")
    assert instructions((), {APP_SERVER: answer(untrusted, USER, SYSTEM)})[0] == (
        "User rules.",)
    # `exec --trust` trusts it for this launch (Codex refuses it for one marked untrusted)
    assert instructions(("exec", "--trust"), {APP_SERVER: answer(untrusted, USER)})[0] == (
        "Untrusted.",)
    # `exec --ignore-user-config` loses config.toml and the trust recorded in it
    assert instructions(("exec", "--ignore-user-config"), {
        APP_SERVER: answer(PROJECT, USER, layer("system", "System."))})[0] == ("System.",)


def test_the_profile_goes_above_the_user_layer_and_below_the_projects() -> None:
    files = {f"{HOME}/work.config.toml": 'developer_instructions = "Work rules."\n'}
    no_project = answer(layer("project", None, dotCodexFolder=f"{REPO}/.codex"), USER, SYSTEM)
    args = ("--profile", "work", "exec")
    assert instructions(args, {APP_SERVER: no_project}, files)[0] == ("Work rules.",)
    assert instructions(args, {APP_SERVER: answer(PROJECT, USER)}, files)[0] == (
        "Project rules.",)
    assert instructions(("-p", "missing", "exec"), {APP_SERVER: answer(USER)}, files)[0] == (
        "User rules.",)


def test_the_users_config_overrides_reach_the_app_server_and_cd_names_the_directory() -> None:
    args = ("-c", 'model="o3"', "exec", "--cd", "../other", "--config=x.y=1", "hi")
    app_server = (CODEX, "-c", 'model="o3"', "-c", "x.y=1", "app-server")
    got, probe = instructions(args, {app_server: answer(USER)})
    assert got == ("User rules.",)
    config_read = json.loads(probe.ran[0][1].splitlines()[2])
    assert config_read["params"]["cwd"] == f"{REPO}/other"


@pytest.mark.parametrize("reply", [None, (1, "", "Error: bad config\n"),
                                   (0, '{"id": 1, "error": {"code": -32600, '
                                       '"message": "unknown variant `config/read`"}}\n', "")])
def test_without_codexs_answer_the_files_are_read_with_a_warning(
        reply: tuple[int, str, str] | None) -> None:
    files = {f"{HOME}/config.toml": 'developer_instructions = "User rules."\n'
                                    f'[projects."{REPO}"]\ntrust_level = "trusted"\n',
             f"{REPO}/.codex/config.toml": 'developer_instructions = "Project rules."\n',
             f"{REPO}/sub/.codex/config.toml": 'model = "o3"\n'}
    commands = {GIT: (0, f"{REPO}\n{REPO}/.git\nsub/\n", "")}
    if reply is not None:
        commands[APP_SERVER] = reply
    got, probe = instructions(("exec",), commands, files)
    assert got == ("Project rules.",)
    [warning] = probe.warnings
    assert "could not report its config layers" in warning


def test_the_files_follow_codexs_trust() -> None:
    """Trust is per directory, else the repository's (the main worktree's for a linked
    one); an untrusted or unknown directory's layer is not loaded."""
    user = 'developer_instructions = "User rules."\n'
    sub_rules = {f"{REPO}/sub/.codex/config.toml": 'developer_instructions = "Sub rules."\n',
                 f"{REPO}/.codex/config.toml": 'developer_instructions = "Root rules."\n'}
    git = {GIT: (0, f"{REPO}\n/work/main-repo/.git\nsub/\n", "")}  # a linked worktree

    def read(config: str) -> tuple[str, ...]:
        files = {f"{HOME}/config.toml": user + config, **sub_rules}
        return instructions(("exec",), git, files, executable=None)[0]

    assert read("") == ("User rules.",)
    assert read('[projects."/work/main-repo"]\ntrust_level = "trusted"\n') == ("Sub rules.",)
    assert read(f'[projects."{REPO}"]\ntrust_level = "trusted"\n') == ("Root rules.",)
    assert read('[projects."/work/main-repo"]\ntrust_level = "trusted"\n'
                f'[projects."{REPO}/sub"]\ntrust_level = "untrusted"\n') == ("Root rules.",)


def test_outside_git_only_the_cwds_own_layer_counts() -> None:
    files = {f"{HOME}/config.toml": f'[projects."{REPO}/sub"]\ntrust_level = "trusted"\n',
             f"{REPO}/.codex/config.toml": 'developer_instructions = "Parent."\n',
             f"{REPO}/sub/.codex/config.toml": 'developer_instructions = "Here."\n'}
    got, probe = instructions(("exec",), {}, files, executable=None)
    assert got == ("Here.",)
    assert probe.warnings == []  # a dry run asks nothing of Codex, and says nothing of it
    assert f"{REPO}/.codex/config.toml" not in probe.read

