"""Codex's effective `developer_instructions` (amux/adapters/codex_layers.py), read through
a fake `Probe`: Codex's own answer to `config/read`, the profile put where Codex puts it,
the files read as Codex 0.171 reads them when the app-server cannot answer, the answer
remembered until anything it depends on changes, and npm's wrapper replaced by the native
binary it would start. One test asks the real pinned Codex through the real probe (and
tests/e2e/test_codex.py through `amux run`)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from amux.adapters import ADAPTERS, codex_layers
from amux.launcher.probe import SystemProbe
from tests.adapting import FakeProbe
from tests.peers import npm_bin

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



# -- remembering Codex's answer ---------------------------------------------------------------

TREE = {f"{HOME}/config.toml": f'[projects."{REPO}"]\ntrust_level = "trusted"\n',
        f"{REPO}/.git/HEAD": "ref: refs/heads/main\n",
        f"{REPO}/.codex/config.toml": 'developer_instructions = "Project rules."\n',
        CODEX: "codex 0.171.0"}


def launch(cache: dict[str, str], files: dict[str, str] | None = None,
           args: tuple[str, ...] = ("exec",), env: dict[str, str] | None = None,
           cwd: str = f"{REPO}/sub", stats: dict[str, str | None] | None = None,
           reply: tuple[int, str, str] | None = None) -> tuple[tuple[str, ...], FakeProbe]:
    """One new launch's hook with the cache `cache`; Codex answers any app-server argv."""
    overrides = [part for i, part in enumerate(args) if i and args[i - 1] == "-c"]
    argv = (CODEX, *(p for o in overrides for p in ("-c", o)), "app-server")
    probe = FakeProbe(dict(TREE if files is None else files),
                      env=env or {"CODEX_HOME": HOME}, cwd=cwd, executable=CODEX,
                      commands={argv: reply or answer(PROJECT, USER, SYSTEM)},
                      cache=cache, stats=stats)
    return ADAPTERS["codex"].user_instructions(args, probe), probe


def test_a_remembered_answer_starts_no_codex() -> None:
    cache: dict[str, str] = {}
    first, asked = launch(cache)
    assert first == ("Project rules.",) and len(asked.ran) == 1 and len(cache) == 1
    again, remembered = launch(cache)
    assert again == first and remembered.ran == [] and remembered.warnings == []
    # what is remembered is Codex's raw layers: the profile and `exec` flags still apply
    files = {**TREE, f"{HOME}/work.config.toml": 'developer_instructions = "Work."\n'}
    assert launch(cache, files, ("--profile", "work", "exec", "--ignore-user-config"))[0] == (
        "Work.",)


def _edited(files: dict[str, str], path: str, text: str) -> dict[str, str]:
    return {**files, path: text}


CHANGES: dict[str, dict[str, Any]] = {
    "the project's .codex/config.toml edited": {"files": _edited(
        TREE, f"{REPO}/.codex/config.toml", 'developer_instructions = "Edited."\n')},
    "a .codex/config.toml created in an ancestor": {"files": _edited(
        TREE, "/work/.codex/config.toml", 'developer_instructions = "Above."\n')},
    "a .codex/config.toml created in the cwd": {"files": _edited(
        TREE, f"{REPO}/sub/.codex/config.toml", 'developer_instructions = "Here."\n')},
    "a .git appearing in an ancestor": {"files": _edited(TREE, "/work/.git/HEAD", "ref\n")},
    "a .git file (a linked worktree) in the cwd": {"files": _edited(
        TREE, f"{REPO}/sub/.git", "gitdir: /work/main/.git/worktrees/sub\n")},
    "$CODEX_HOME/config.toml touched": {"stats": {f"{HOME}/config.toml": "touched"}},
    "a profile file created in $CODEX_HOME": {"files": _edited(
        TREE, f"{HOME}/other.toml", "x = 1\n")},
    "$CODEX_HOME/.env created": {"files": _edited(TREE, f"{HOME}/.env", "X=1\n")},
    "/etc/codex/requirements.toml created": {"files": _edited(
        TREE, "/etc/codex/requirements.toml", "allowed_sandbox_modes = []\n")},
    "a different -c": {"args": ("-c", 'model="o3"', "exec")},
    "another cwd": {"cwd": f"{REPO}/other"},
    "another CODEX_HOME": {"env": {"CODEX_HOME": "/d"}},
    "another HOME": {"env": {"CODEX_HOME": HOME, "HOME": "/home/v"}},
    "a CODEX_ variable set": {"env": {"CODEX_HOME": HOME, "CODEX_SANDBOX": "seatbelt"}},
    "the binary replaced": {"files": _edited(TREE, CODEX, "codex 0.172.0")},
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_anything_codexs_answer_depends_on_changing_asks_again(change: dict[str, Any]) -> None:
    cache: dict[str, str] = {}
    launch(cache)
    _, probe = launch(cache, **change)
    assert len(probe.ran) == 1
    assert len(cache) == 2  # the new answer is remembered beside the old one
    assert launch(cache)[1].ran == []  # the old one still stands for the old inputs


def test_nothing_is_remembered_without_a_sound_key_or_codexs_answer() -> None:
    cache: dict[str, str] = {}
    # a path that cannot be signed (unreadable, or changed a moment ago)
    unsigned: dict[str, Any] = {"stats": {f"{REPO}/.codex/config.toml": None}}
    assert launch(cache, **unsigned)[1].ran and launch(cache, **unsigned)[1].ran
    # the files read when Codex cannot answer
    got, probe = launch(cache, reply=(1, "", "Error: bad config\n"))
    assert probe.warnings and got == ()  # no git answer either: the cwd's own layer only
    assert cache == {}
    # an unreadable remembered value is asked again (and replaced)
    launch(cache)
    [key] = cache
    cache[key] = "[not json"
    again, probe = launch(cache)
    assert again == ("Project rules.",) and len(probe.ran) == 1
    assert json.loads(cache[key])


# -- npm's wrapper: the native binary is started for the probe --------------------------------


def npm_tree(root: Path, *, platform_manifest: str = '{"name": "@openai/codex"}',
             native: bool = True) -> tuple[Path, Path]:
    """An npm global install of Codex as `npm i -g` lays it out: (bin/codex, the native
    binary codex.js would start)."""
    target = codex_layers.npm_target()
    if target is None:
        pytest.skip(f"codex.js has no native binary for {sys.platform} {platform.machine()}")
    modules = root / "lib" / "node_modules" / "@openai"
    (modules / "codex" / "bin").mkdir(parents=True)
    (modules / "codex" / "bin" / "codex.js").write_text("#!/usr/bin/env node\n")
    package = modules / codex_layers.NPM_PACKAGES[target].split("/")[1]
    binary = package / "vendor" / target / "bin" / "codex"
    binary.parent.mkdir(parents=True)
    (package / "package.json").write_text(platform_manifest)
    if native:
        binary.write_text("")
    (root / "bin").mkdir()
    (root / "bin" / "codex").symlink_to("../lib/node_modules/@openai/codex/bin/codex.js")
    return root / "bin" / "codex", binary


def test_npms_wrapper_is_replaced_by_the_binary_it_would_start(tmp_path: Path) -> None:
    wrapper, binary = npm_tree(tmp_path)
    probe = SystemProbe({"HOME": str(tmp_path)}, str(tmp_path))
    root = str(tmp_path / "lib" / "node_modules" / "@openai" / "codex")
    managed = {name: None for name in codex_layers.MANAGED_BY}
    found = codex_layers.npm_native(probe, str(wrapper))
    assert found is not None and found[0] == str(binary)
    assert found[1].shown() == {**managed, "CODEX_MANAGED_PACKAGE_ROOT": root,
                                "CODEX_MANAGED_BY_NPM": "1"}
    # the package manager codex.js detects is named to the binary as it would name it
    bun = SystemProbe({"npm_config_user_agent": "bun/1.2.0 npm/? node/v22"}, str(tmp_path))
    assert managed_by(bun, wrapper) == ["CODEX_MANAGED_BY_BUN"]
    (tmp_path / "lib" / "node_modules" / ".modules.yaml").write_text("layoutVersion: 5\n")
    assert managed_by(probe, wrapper) == ["CODEX_MANAGED_BY_PNPM"]


def managed_by(probe: SystemProbe, wrapper: Path) -> list[str]:
    found = codex_layers.npm_native(probe, str(wrapper))
    assert found is not None
    return [name for name, value in found[1].shown().items() if name in codex_layers.MANAGED_BY
            and value == "1"]


@pytest.mark.parametrize("case", ["not the wrapper", "a relative path", "NODE_OPTIONS",
                                  "no platform package", "exports", "no native binary",
                                  "Vite+ metadata"])
def test_whatever_is_uncertain_starts_the_wrapper(tmp_path: Path, case: str) -> None:
    wrapper, binary = npm_tree(
        tmp_path, platform_manifest='{"exports": {".": "./x.js"}}' if case == "exports"
        else '{"name": "@openai/codex"}', native=case != "no native binary")
    env = {"NODE_OPTIONS": "--preserve-symlinks"} if case == "NODE_OPTIONS" else {}
    executable = {"not the wrapper": str(binary),
                  "a relative path": "bin/codex"}.get(case, str(wrapper))
    if case == "no platform package":
        (binary.parents[3] / "package.json").unlink()
    if case == "Vite+ metadata":
        (tmp_path / "packages" / "@openai").mkdir(parents=True)
        (tmp_path / "packages" / "@openai" / "codex.json").write_text("{}")
        (tmp_path / "packages" / "bin").symlink_to(tmp_path / "bin")
        executable = str(tmp_path / "packages" / "bin" / "codex")
    assert codex_layers.npm_native(SystemProbe(env, str(tmp_path)), executable) is None


def test_the_hook_asks_the_native_binary_and_keys_it() -> None:
    target = codex_layers.npm_target()
    if target is None:
        pytest.skip(f"codex.js has no native binary for {sys.platform} {platform.machine()}")
    modules = "/usr/lib/node_modules"
    wrapper = f"{modules}/@openai/codex/bin/codex.js"
    native = f"{modules}/{codex_layers.NPM_PACKAGES[target]}/vendor/{target}/bin/codex"
    files = {**TREE, wrapper: "#!/usr/bin/env node\n", native: "",
             f"{modules}/{codex_layers.NPM_PACKAGES[target]}/package.json": "{}"}
    cache: dict[str, str] = {}

    def hook(files: dict[str, str]) -> FakeProbe:
        probe = FakeProbe(files, env={"CODEX_HOME": HOME}, cwd=f"{REPO}/sub",
                          executable=wrapper, cache=cache,
                          commands={(native, "app-server"): answer(PROJECT, USER)})
        assert ADAPTERS["codex"].user_instructions(("exec",), probe) == ("Project rules.",)
        return probe

    probe = hook(files)
    assert probe.ran_env[0] is not None
    assert probe.ran_env[0].shown() == {**{name: None for name in codex_layers.MANAGED_BY},
                                "CODEX_MANAGED_PACKAGE_ROOT": f"{modules}/@openai/codex",
                                "CODEX_MANAGED_BY_NPM": "1"}
    assert hook(files).ran == []
    assert len(hook({**files, native: "updated"}).ran) == 1


# -- the real Codex ---------------------------------------------------------------------------


class Counted(SystemProbe):
    """The real probe, recording what it runs."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.ran: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], **options: Any) -> tuple[int, str, str] | None:
        self.ran.append(tuple(argv))
        return super().run(argv, **options)


def test_the_real_codex_is_remembered_until_its_project_layer_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned Codex (through npm's wrapper, started as its native binary) answers the
    first launch; the second is answered from the cache file with the same instructions;
    editing the trusted project's .codex/config.toml asks Codex again."""
    codex = str(npm_bin("codex"))
    # the files below were all written a moment ago: sign them anyway (tested apart)
    monkeypatch.setattr("amux.launcher.userfiles.RECENT_CHANGE_SECONDS", 0.0)
    home = tmp_path / "codex-home"
    home.mkdir()
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".codex").mkdir()
    rules = project / ".codex" / "config.toml"
    rules.write_text('developer_instructions = "Project rules."\n')
    (home / "config.toml").write_text('developer_instructions = "User rules."\n'
                                      f'[projects."{project.resolve()}"]\n'
                                      'trust_level = "trusted"\n')
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(home)}
    cache = tmp_path / "amux" / "cache" / "probe.json"

    def launch() -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        probe = Counted(env, str(project / "sub"), executable=codex, cache=cache)
        got = ADAPTERS["codex"].user_instructions(("exec",), probe)
        assert probe.warnings == []
        return got, probe.ran

    native = codex_layers.npm_native(SystemProbe(env, str(tmp_path)), codex)
    assert native is not None
    first, ran = launch()
    assert first == ("Project rules.",)
    assert [argv[0] for argv in ran] == [native[0]]  # not Node: the binary it would start
    again, ran = launch()
    assert again == first and ran == []
    rules.write_text('developer_instructions = "Edited project rules."\n')
    edited, ran = launch()
    assert edited == ("Edited project rules.",) and len(ran) == 1
    assert launch() == (edited, [])
