"""`amux settings show|set|unset`: the per-user defaults of `amux run`, in
~/.config/amux/settings.toml (as platformdirs places it), written keeping the user's comments;
a key or value amux cannot use is refused naming it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import platformdirs
import pytest

from amux.launcher.settings import settings_path
from tests.cli.script import console

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("xdg", [None, "/tmp/xdg-config", "relative/ignored"])
def test_the_file_is_where_platformdirs_puts_a_users_config(
        xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    expected = Path(platformdirs.user_config_dir("amux", ensure_exists=False)) / "settings.toml"
    assert settings_path() == expected


def test_set_show_and_unset_keep_the_users_comments(tmp_path: Path) -> None:
    home = tmp_path / "amux"
    path = Path(os.environ["HOME"]) / ".config" / "amux" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text("# my local models\n[run]\nmodel = \"qwen3\"  # the small one\n")
    for key, value in (("run.endpoint", "http://me:s3cret@127.0.0.1:11434/v1"),
                       ("agents.claude.memory", "false")):
        done = console(home, "settings", "set", key, value)
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"key": "agents.claude.memory", "value": False}
    text = path.read_text()
    assert "# my local models" in text and 'model = "qwen3"  # the small one' in text
    assert "[agents.claude]\nmemory = false" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a URL may hold a password
    shown = json.loads(console(home, "settings", "show").stdout)
    assert shown == {"path": str(path), "settings": {
        "run.model": "qwen3", "run.endpoint": "http://127.0.0.1:11434/v1",
        "agents.claude.memory": False}}
    claude = json.loads(console(home, "settings", "show", "claude").stdout)["settings"]
    assert claude["memory"] == {"value": False, "from": "agents.claude.memory"}
    assert claude["model"] == {"value": "qwen3", "from": "run.model"}
    assert console(home, "settings", "unset", "run.endpoint").returncode == 0
    assert "endpoint" not in path.read_text() and "# the small one" in path.read_text()


@pytest.mark.parametrize(("args", "said"), [
    (("set", "run.memroy", "false"), "setting 'run.memroy': unknown key; did you mean "
     "'memory'?"),
    (("set", "agents.cluade.memory", "false"), "the keys are run.KEY (every agent) and "
     "agents.NAME.KEY (one agent: claude, cline, codex"),
    (("set", "run.memory", "maybe"), "run.memory: must be true or false"),
    (("set", "run.endpoint", "127.0.0.1:11434"), "run.endpoint: '127.0.0.1:11434' is not an "
     "http:// or https:// URL"),
    (("set", "run.endpoint-api", "grpc"), "'grpc' is none of openai, anthropic, gemini"),
])
def test_what_amux_cannot_use_is_refused_naming_it(tmp_path: Path, args: tuple[str, ...],
                                                   said: str) -> None:
    done = console(tmp_path / "amux", "settings", *args)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert not settings_path().exists()
