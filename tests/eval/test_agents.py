"""The evaluated agents as data: each keeps its whole configuration in the run's root, and
`amux eval live` offers every one with its default key variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.adapters.gemini import gemini_home
from amux.cli.eval import _parser
from amux.eval.agents import AGENTS, Homes

PATH_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                  "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "CODEX_HOME",
                  "PI_CODING_AGENT_DIR")


def test_the_cli_offers_every_agent_with_its_key_variable(capsys: pytest.CaptureFixture[str],
                                                          ) -> None:
    assert set(AGENTS) == {"claude", "codex", "pi", "gemini", "opencode"}
    for name in AGENTS:
        args = _parser().parse_args(["live", "--agent", name, "--base-url", "http://x",
                                     "--model", "m"])
        assert args.agent == name
    with pytest.raises(SystemExit):
        _parser().parse_args(["live", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("ANTHROPIC_API_KEY for claude, OPENAI_API_KEY for codex, pi and opencode, "
            "GEMINI_API_KEY for gemini") in text
    assert "GOOGLE_GEMINI_BASE_URL" in text and "Codex, Pi and OpenCode" in text


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_agent_is_configured_inside_the_run_root(name: str, tmp_path: Path) -> None:
    homes = Homes(tmp_path / "run")
    homes.make()
    env = AGENTS[name].configure(homes)
    for variable in PATH_VARIABLES:
        if variable in env:
            assert Path(env[variable]).is_relative_to(homes.root), variable
    assert [path for path in tmp_path.rglob("*") if not path.is_relative_to(homes.root)] == []
    assert AGENTS[name].turn(homes, "PROMPT").count("PROMPT") == 1


def test_gemini_reads_the_run_home_with_api_key_auth(tmp_path: Path) -> None:
    """The adapter mirrors `gemini_home` of the agent's environment: with HOME the run's
    (as `amux.eval.live` sets it) that is the run's home, never the user's."""
    homes = Homes(tmp_path)
    homes.make()
    env = {"HOME": str(homes.home), **AGENTS["gemini"].configure(homes)}
    assert gemini_home(env) == str(homes.home)
    settings = json.loads((homes.home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert AGENTS["gemini"].turn(homes, "P") == ["-p", "P", "--approval-mode", "auto_edit"]


def test_opencode_keeps_every_xdg_directory_in_the_run_home(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    homes.make()
    env = AGENTS["opencode"].configure(homes)
    assert {env[k] for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                             "XDG_STATE_HOME")} == {
        str(homes.home / p) for p in (".config", ".local/share", ".cache", ".local/state")}
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert AGENTS["opencode"].turn(homes, "P") == ["run", "P"]
    assert AGENTS["opencode"].answer(homes, "\n42\n") == "42"
