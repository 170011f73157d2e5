"""The evaluated agents as their adapters' data (`headless`): each keeps its whole
configuration in the run's root, and `amux eval live` offers every one with its default key
variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.gemini import gemini_home
from amux.cli.eval import _parser
from amux.eval.agents import (
    KEY_VARIABLE,
    Endpoint,
    Homes,
    credential,
    prepare,
    read_answer,
    turn_args,
)

PATH_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                  "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "CODEX_HOME",
                  "PI_CODING_AGENT_DIR")


def test_the_cli_offers_every_agent_with_its_key_variable(capsys: pytest.CaptureFixture[str],
                                                          ) -> None:
    assert set(ADAPTERS) == {"claude", "cline", "codex", "copilot", "gemini", "kilo", "opencode",
                             "pi", "qwen"}
    for name in ADAPTERS:
        args = _parser().parse_args(["live", "--agent", name, "--base-url", "http://x",
                                     "--model", "m"])
        assert args.agent == name
    with pytest.raises(SystemExit):
        _parser().parse_args(["live", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("ANTHROPIC_API_KEY for claude, OPENAI_API_KEY for cline, codex, kilo, opencode, pi and "
            "qwen, COPILOT_PROVIDER_API_KEY for copilot, GEMINI_API_KEY for gemini") in text
    assert ("base (e.g. http://localhost:11434/v1) for Cline, Codex, Copilot CLI, Kilo Code CLI, "
            "OpenCode, Pi and Qwen Code") in text
    assert "server's root (e.g. https://generativelanguage.googleapis.com) for Gemini CLI" in text


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_an_agent_is_configured_inside_the_run_root(name: str, tmp_path: Path) -> None:
    homes = Homes(tmp_path / "run")
    homes.make()
    plan = homes.headless(ADAPTERS[name])
    env = prepare(plan).apply({})
    for variable in PATH_VARIABLES:
        if variable in env:
            assert Path(env[variable]).is_relative_to(homes.root), variable
    assert [path for path in tmp_path.rglob("*") if not path.is_relative_to(homes.root)] == []
    assert turn_args(plan, "PROMPT").count("PROMPT") == 1
    for path in (*plan.dirs, *(file.path for file in plan.files), plan.answer_file or "/"):
        assert path == "/" or Path(path).is_relative_to(homes.root), path


def test_gemini_reads_the_run_home_with_api_key_auth(tmp_path: Path) -> None:
    """The adapter mirrors `gemini_home` of the agent's environment: with HOME the run's
    (as `amux.eval.live` sets it) that is the run's home, never the user's."""
    homes = Homes(tmp_path)
    homes.make()
    plan = homes.headless(ADAPTERS["gemini"])
    env = prepare(plan).apply({"HOME": str(homes.home)})
    assert gemini_home(env) == str(homes.home)
    settings = json.loads((homes.home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert turn_args(plan, "P") == ["-p", "P", "--approval-mode", "auto_edit"]


def test_opencode_keeps_every_xdg_directory_in_the_run_home(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    homes.make()
    plan = homes.headless(ADAPTERS["opencode"])
    env = prepare(plan).apply({})
    assert {env[k] for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                             "XDG_STATE_HOME")} == {
        str(homes.home / p) for p in (".config", ".local/share", ".cache", ".local/state")}
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert turn_args(plan, "P") == ["run", "P"]
    assert read_answer(plan, "\n42\n") == "42"


def test_claude_answers_in_its_json_and_codex_in_its_answer_file(tmp_path: Path) -> None:
    homes = Homes(tmp_path)
    homes.make()
    claude = homes.headless(ADAPTERS["claude"])
    assert read_answer(claude, 'noise\n{"type": "result", "result": "42"}\n') == "42"
    assert read_answer(claude, "not json") == "not json"
    codex = homes.headless(ADAPTERS["codex"])
    assert codex.answer_file is not None
    Path(codex.answer_file).write_text("stale")
    argv = turn_args(codex, "P")
    assert not Path(codex.answer_file).exists()  # a turn never reads the last one's answer
    assert argv[argv.index("-o") + 1] == codex.answer_file and argv[-1] == "P"
    assert read_answer(codex, "the log") == "the log"
    Path(codex.answer_file).write_text("42\n")
    assert read_answer(codex, "the log") == "42"


def test_the_credential_is_the_given_variable_else_the_agents_first_that_is_set() -> None:
    claude = ADAPTERS["claude"]
    assert credential(claude, None, {}) is None
    assert credential(claude, None, {"ANTHROPIC_AUTH_TOKEN": "t"}) == ("ANTHROPIC_AUTH_TOKEN",
                                                                         "t")
    both = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "t", "MINE": "m"}
    assert credential(claude, None, both) == (KEY_VARIABLE, "k")
    assert credential(claude, "MINE", both) == (KEY_VARIABLE, "m")
    assert credential(ADAPTERS["codex"], "MISSING", both) is None
    options, env = Endpoint("http://x/v1", "m", (KEY_VARIABLE, "k")).launch_options()
    assert options[-2:] == ["--endpoint-key-env", KEY_VARIABLE] and env == {KEY_VARIABLE: "k"}
