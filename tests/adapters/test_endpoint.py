"""`amux run --endpoint`: each adapter points its agent at the endpoint for one launch,
with and without memory, the same way, keeps secrets out of the plan, and refuses an API
kind its agent cannot speak."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    ENDPOINT_PROVIDER,
    NO_KEY,
    AgentRequest,
    EndpointRefused,
    EndpointRequest,
)
from amux.adapters.fallback import FallbackAdapter
from amux.adapters.pi import ENDPOINT_FILE
from tests.adapting import URL, endpoint_plan
from tests.peers import missing


def codex_overrides(argv: tuple[str, ...]) -> dict[str, object]:
    values = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-c"]
    return {key: tomlkit.parse(f"v = {value}")["v"]
            for key, _, value in (v.partition("=") for v in values)}


@pytest.mark.parametrize("with_memory", [True, False])
@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_endpoint_adds_to_the_plan_and_changes_nothing_else(name: str,
                                                                with_memory: bool) -> None:
    """Pointing at an endpoint only adds: the user's arguments, the memory wiring and the
    suppression are those of the plan without it."""
    api = {"claude": "anthropic", "gemini": "gemini"}.get(name, "openai")
    url = URL.removesuffix("/v1") if name == "claude" else URL
    bare = endpoint_plan(name, None, with_memory=with_memory)
    pointed = endpoint_plan(name, EndpointRequest(url, "qwen3", api), with_memory=with_memory)
    extra = len(pointed.argv) - len(bare.argv)
    assert pointed.argv[:1] + pointed.argv[1 + extra:] == bare.argv
    merged = {"OPENCODE_CONFIG_CONTENT", "KILO_CONFIG_CONTENT"}  # one JSON text: its keys
    # are compared below
    # Cline's sandbox mode would replace the endpoint's provider file: an endpoint takes the
    # launch out of it (tests/adapters/test_cline.py)
    merged |= {"CLINE_SANDBOX", "CLINE_SANDBOX_DATA_DIR"}
    assert {k: v for k, v in pointed.env.set.items() if k in bare.env.set and k not in merged} == {
        k: v for k, v in bare.env.set.items() if k not in merged}
    assert pointed.suppression == bare.suppression and pointed.channel == bare.channel
    assert pointed.instructions == bare.instructions
    settings = [f for f in bare.files if name == "gemini" and f.path.endswith("/settings.json")]
    assert set(bare.files) - set(settings) <= set(pointed.files)  # Gemini's: below
    if name == "claude":
        assert pointed.env.set["ANTHROPIC_BASE_URL"] == url
        assert pointed.env.set["ANTHROPIC_MODEL"] == pointed.env.set["ANTHROPIC_SMALL_FAST_MODEL"] \
            == "qwen3"
        assert pointed.env.set["ANTHROPIC_AUTH_TOKEN"] == NO_KEY  # no login needed
        assert "ANTHROPIC_API_KEY" in pointed.env.unset  # the user's own key stays home
    elif name == "codex":
        overrides = codex_overrides(pointed.argv[:1 + extra])
        provider = f"model_providers.{ENDPOINT_PROVIDER}"
        assert overrides == {"model_provider": ENDPOINT_PROVIDER,
                             f"{provider}.name": "amux run --endpoint",
                             f"{provider}.base_url": URL, f"{provider}.wire_api": "responses",
                             "model": "qwen3"}
    elif name in ("opencode", "kilo"):  # Kilo is a fork of OpenCode, its variables KILO_*
        prefix = name.upper()
        config = json.loads(pointed.env.set[f"{prefix}_CONFIG_CONTENT"])
        model = f"{ENDPOINT_PROVIDER}/qwen3"
        assert config.pop("model") == config.pop("small_model") == model
        assert config.pop("provider") == {ENDPOINT_PROVIDER: {
            "npm": "@ai-sdk/openai-compatible", "name": "amux run --endpoint",
            "options": {"baseURL": URL, "apiKey": NO_KEY},
            "models": {"qwen3": {"name": "qwen3"}}}}
        assert config == json.loads(bare.env.set.get(f"{prefix}_CONFIG_CONTENT", "{}"))
        assert pointed.env.set[f"{prefix}_DISABLE_MODELS_FETCH"] == "1" and extra == 0
    elif name == "gemini":
        assert pointed.env.set["GOOGLE_GEMINI_BASE_URL"] == URL and extra == 2
        assert pointed.argv[1:3] == ("--model", "qwen3")
        assert pointed.env.set["GEMINI_API_KEY"] == NO_KEY and "GOOGLE_API_KEY" in pointed.env.unset
        [ours] = [json.loads(f.text) for f in pointed.files if f.path.endswith("/settings.json")]
        assert ours.pop("security") == {"auth": {"selectedType": "gemini-api-key"}}
        # Nothing else changed (without memory: the user's settings, none here).
        assert [ours] == ([json.loads(f.text) for f in settings] or [{}])
    elif name == "copilot":
        assert pointed.argv[1:1 + extra] == ("--no-auto-update",)
        assert {k: pointed.env.set[k] for k in pointed.env.set if k not in bare.env.set} == {
            "COPILOT_PROVIDER_BASE_URL": URL, "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_WIRE_API": "completions", "COPILOT_MODEL": "qwen3",
            "COPILOT_PROVIDER_API_KEY": NO_KEY}
        assert {"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_BEARER_TOKEN"} <= set(
            pointed.env.unset)
    elif name == "cline":
        [file] = [f for f in pointed.files if f not in bare.files]
        assert extra == 0 and pointed.env.set["CLINE_PROVIDER_SETTINGS_PATH"] == file.path
        provider = json.loads(file.text)["providers"]["openai-compatible"]
        assert provider["settings"]["baseUrl"] == URL and provider["updatedAt"]
        assert pointed.env.set["CLINE_SESSION_BACKEND_MODE"] == "local"
        assert pointed.env.set["OPENAI_API_KEY"] == NO_KEY
    elif name == "qwen":
        assert pointed.argv[1:1 + extra] == ("--auth-type", "openai", "--model", "qwen3")
        assert pointed.env.set["OPENAI_BASE_URL"] == URL
        assert pointed.env.set["OPENAI_API_KEY"] == NO_KEY
    else:
        [file] = [f for f in pointed.files if f not in bare.files]
        assert pointed.argv[1:1 + extra] == ("--extension", file.path, "--model",
                                              f"{ENDPOINT_PROVIDER}/qwen3")
        assert file.path.endswith(ENDPOINT_FILE) and file.mode == 0o600


def test_a_key_is_named_never_held() -> None:
    """The key's variable is named in the plan (or copied by the launcher): its value is in
    no plan, so no dry run can print it."""
    claude = endpoint_plan("claude", EndpointRequest(URL, "m", None, "MY_KEY"))
    assert claude.env.copy == {"ANTHROPIC_API_KEY": "MY_KEY"}
    assert "ANTHROPIC_AUTH_TOKEN" in claude.env.unset and "ANTHROPIC_API_KEY" not in claude.env.set
    bearer = endpoint_plan("claude", EndpointRequest(URL, "m", None, "ANTHROPIC_AUTH_TOKEN"))
    assert bearer.env.copy == {"ANTHROPIC_AUTH_TOKEN": "ANTHROPIC_AUTH_TOKEN"}
    assert "ANTHROPIC_API_KEY" in bearer.env.unset
    codex = codex_overrides(endpoint_plan("codex", EndpointRequest(URL, "m", None, "MY_KEY")).argv)
    assert codex[f"model_providers.{ENDPOINT_PROVIDER}.env_key"] == "MY_KEY"
    [pi_file] = [f for f in endpoint_plan("pi", EndpointRequest(URL, "m", None, "MY_KEY")).files
                 if f.path.endswith(ENDPOINT_FILE)]
    assert '"apiKey": "MY_KEY"' in pi_file.text


@pytest.mark.parametrize(("name", "api", "needs"), [
    ("claude", "openai", "an Anthropic Messages endpoint"),
    ("codex", "anthropic", "serves the Responses API"),
])
def test_an_api_the_agent_cannot_speak_is_refused_naming_what_it_needs(
        name: str, api: str, needs: str) -> None:
    with pytest.raises(EndpointRefused, match=needs):
        endpoint_plan(name, EndpointRequest(URL, "m", api))  # type: ignore[arg-type]


def test_an_agent_amux_does_not_know_cannot_be_pointed() -> None:
    with pytest.raises(EndpointRefused, match="no way to point my-agent"):
        FallbackAdapter().plan(AgentRequest("/usr/bin/my-agent", (), None,
                                            endpoint=EndpointRequest(URL, "m")))


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=15, deadline=None)
@given(url=TEXT, model=TEXT, key=st.none() | TEXT)
def test_pis_extension_registers_exactly_the_endpoint_whatever_its_text(
        tmp_path_factory: pytest.TempPathFactory, url: str, model: str,
        key: str | None) -> None:
    """The extension is JavaScript whatever the URL, model or key name hold (quotes, line
    separators, `</script>`…): Node imports it and it registers that provider, unchanged."""
    node = shutil.which("node") or missing("node")
    directory = tmp_path_factory.mktemp("pi")
    pointed = endpoint_plan("pi", EndpointRequest(url, model, "openai", key),
                            files_dir=str(directory))
    [file] = [f for f in pointed.files if f.path.endswith(ENDPOINT_FILE)]
    path = Path(file.path.removesuffix(".js") + ".mjs")  # ESM for plain node, as Pi loads it
    path.write_text(file.text, encoding="utf-8")
    done = subprocess.run(
        [str(node), "--input-type=module", "-e",
         f"const m = await import({json.dumps(path.as_uri())});"
         "m.default({registerProvider: (n, c) => console.log(JSON.stringify([n, c]))});"],
        capture_output=True, text=True, timeout=30, check=True)
    name, config = json.loads(done.stdout)
    assert name == ENDPOINT_PROVIDER
    assert (config["baseUrl"], config["models"][0]["id"], config["apiKey"]) == (
        url, model, key or NO_KEY)
    assert config["api"] == "openai-completions"


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_user_and_password_in_the_url_never_reach_argv(name: str) -> None:
    """argv is world-readable (/proc/PID/cmdline): every adapter leaves the URL's user and
    password out of it; the agent gets them in its environment (or Pi in its own 0600
    extension file), and Codex as an `Authorization` header read from a variable named
    in its settings, marked secret for the dry run."""
    api = {"claude": "anthropic", "gemini": "gemini"}.get(name, "openai")
    url = URL.replace("://", "://me:s3cr3t%40x@")
    pointed = endpoint_plan(name, EndpointRequest(url, "qwen3", api))
    assert not [arg for arg in pointed.argv if "s3cr3t" in arg]
    held = [*pointed.env.set.values(), *(file.text for file in pointed.files)]
    if name == "codex":
        assert codex_overrides(pointed.argv)[
            f"model_providers.{ENDPOINT_PROVIDER}.env_http_headers"] == {
            "Authorization": "AMUX_ENDPOINT_AUTH_TOKEN"}
        assert pointed.env.set["AMUX_ENDPOINT_AUTH_TOKEN"] == "Basic bWU6czNjcjN0QHg="  # me:s3cr3t
        assert pointed.env.secret == ("AMUX_ENDPOINT_AUTH_TOKEN",)
    else:
        assert any(url in text for text in held) and pointed.env.secret == ()
