"""Environments and config files that point each real agent CLI at a `MockModel`.

Every helper takes a fresh directory `root` owned by the test; the agent's home
(`HOME`), its config directory and the working directory all live under it, so no run
touches the real home. The environment starts empty but for `PATH` (and the locale), so
no `ANTHROPIC_*`/`OPENAI_*` variable of the machine leaks in. See AGENT-RECIPES.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amux.adapters.opencode import xdg_dirs
from tests.mockmodel.server import MockModel, Recorded, default_is_side

REPO = Path(__file__).resolve().parents[2]
KEPT = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


def base_env(root: Path) -> dict[str, str]:
    """PATH and locale of this process, HOME=root/home."""
    env = {key: os.environ[key] for key in KEPT if key in os.environ}
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    return env


def amux_mcp_argv() -> list[str]:
    """`python -m amux memory mcp` with this interpreter."""
    return [sys.executable, "-m", "amux", "memory", "mcp"]


def amux_env(socket_path: str, token: str) -> dict[str, str]:
    """What `amux memory mcp` needs to reach a Hub: its address, a token, the repository."""
    return {"AMUX_HUB": f"unix:{socket_path}", "AMUX_TOKEN": token, "PYTHONPATH": str(REPO)}


# -- Claude Code ---------------------------------------------------------------------------


def claude_env(root: Path, model: MockModel, **extra: str) -> dict[str, str]:
    """Claude against the mock: no retries, no non-essential traffic, its per-uid temp dir
    (`/tmp/claude-<uid>/` by default) under `root` too. Tool search stays at Claude's default
    (on: MCP tools are deferred unless their server is `alwaysLoad`), as users run it."""
    scratch = root / "claude-tmp"
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {**base_env(root), "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "CLAUDE_CODE_TMPDIR": str(scratch),
            "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-dummy",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **extra}


def claude_mcp_config(argv: Sequence[str], env: dict[str, str] | None = None) -> str:
    """`--mcp-config` JSON naming one stdio server `amux`, always loaded as amux launches
    it (its tools in `tools[]`, not deferred behind Claude's tool search)."""
    server: dict[str, object] = {"command": argv[0], "args": list(argv[1:]), "alwaysLoad": True}
    if env:
        server["env"] = env
    return json.dumps({"mcpServers": {"amux": server}})


# -- Codex -----------------------------------------------------------------------------------


def codex_config(model: MockModel, extra: str = "") -> str:
    """A config.toml with the mock as the only provider; `extra` goes at the top level."""
    return (f'model = "mock-model"\nmodel_provider = "mock"\n{extra}\n'
            "[model_providers.mock]\n"
            f'name = "Mock"\nbase_url = "{model.base_url}"\nwire_api = "responses"\n'
            'env_key = "MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n')


def codex_env(root: Path, model: MockModel, extra_config: str = "",
              **extra: str) -> dict[str, str]:
    """CODEX_HOME=root/codex with `codex_config(model, extra_config)` written into it."""
    codex_home = root / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(model, extra_config))
    return {**base_env(root), "CODEX_HOME": str(codex_home), "MOCK_API_KEY": "sk-dummy",
            **extra}


def toml_string(value: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes for these values)."""
    return json.dumps(value)


def codex_mcp_overrides(argv: Sequence[str], env: dict[str, str]) -> list[str]:
    """`-c` overrides that declare the stdio MCP server `amux`, approved, with `env`."""
    table = ",".join(f"{key}={toml_string(value)}" for key, value in env.items())
    return ["-c", f"mcp_servers.amux.command={toml_string(argv[0])}",
            "-c", f"mcp_servers.amux.args={json.dumps(list(argv[1:]))}",
            "-c", 'mcp_servers.amux.default_tools_approval_mode="approve"',
            "-c", f"mcp_servers.amux.env={{{table}}}"]


# -- Pi ----------------------------------------------------------------------------------------


def pi_env(root: Path, model: MockModel, **extra: str) -> dict[str, str]:
    """PI_CODING_AGENT_DIR=root/pi with a models.json naming the mock as `mock/mock-model`,
    and Node 22 first on PATH (Pi 1.x needs >= 22.19; `tests.peers.node22_dir`)."""
    from tests.peers import with_node22

    agent_dir = root / "pi"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"mock": {
        "baseUrl": model.base_url, "api": "openai-completions", "apiKey": "sk-dummy",
        "models": [{"id": "mock-model"}]}}}))
    return {**with_node22(base_env(root)), "PI_CODING_AGENT_DIR": str(agent_dir),
            "PI_OFFLINE": "1", **extra}


# -- Gemini CLI ----------------------------------------------------------------------------------


def gemini_settings(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """User settings selecting API-key auth (with only GOOGLE_GEMINI_BASE_URL set, 0.61.0
    picks the `gateway` auth type, which `gemini -p` refuses: "Invalid auth method
    selected."), merged with `settings` at the top level."""
    return {"security": {"auth": {"selectedType": "gemini-api-key"}}, **(settings or {})}


def gemini_env(root: Path, model: MockModel, settings: dict[str, Any] | None = None,
               **extra: str) -> dict[str, str]:
    """Gemini CLI against the mock: HOME=root/home with `gemini_settings(settings)` in
    `~/.gemini/settings.json`, GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL=`model.url`, the
    working directory trusted (headless runs refuse an untrusted one, exit 55) and TMPDIR
    under `root` (its error reports go there)."""
    env = base_env(root)
    config = Path(env["HOME"]) / ".gemini"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(gemini_settings(settings)))
    scratch = root / "gemini-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    return {**env, "GEMINI_API_KEY": "sk-dummy", "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true", "TMPDIR": str(scratch), **extra}


def gemini_mcp_server(argv: Sequence[str], env: dict[str, str] | None = None,
                      trust: bool = True) -> dict[str, Any]:
    """A `mcpServers` entry for a stdio server. `trust: true` is what lists its tools in a
    headless run: untrusted MCP tools need a confirmation `-p` cannot give, so Gemini CLI
    0.61.0 leaves them out of `functionDeclarations` altogether."""
    server: dict[str, Any] = {"command": argv[0], "args": list(argv[1:])}
    if env:
        server["env"] = env
    if trust:
        server["trust"] = True
    return server


# -- running ------------------------------------------------------------------------------------


def run_agent(argv: Sequence[str | os.PathLike[str]], env: dict[str, str], cwd: Path,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run an agent CLI to completion: stdin closed, output captured, a hard timeout."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(arg) for arg in argv], env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


# -- OpenCode ------------------------------------------------------------------------------------


def opencode_provider(model: MockModel) -> dict[str, Any]:
    """OpenCode config making `mock/mock-model` its model (a custom provider on the bundled
    `@ai-sdk/openai-compatible`: nothing is installed)."""
    return {"provider": {"mock": {
        "npm": "@ai-sdk/openai-compatible", "name": "Mock",
        "options": {"baseURL": model.base_url, "apiKey": "sk-dummy"},
        "models": {"mock-model": {"name": "Mock Model"}}}},
        "model": "mock/mock-model"}


def made_xdg_dirs(home: str) -> dict[str, str]:
    """The XDG directories of `home` at their defaults (where OpenCode and Kilo keep config,
    data, cache and state: `amux.adapters.opencode.xdg_dirs`), made."""
    dirs = xdg_dirs(home)
    for directory in dirs.values():
        os.makedirs(directory, exist_ok=True)
    return dirs


def opencode_env(root: Path, model: MockModel, config: dict[str, Any] | None = None,
                 **extra: str) -> dict[str, str]:
    """OpenCode against the mock: HOME=root/home with every XDG directory under it, the mock
    provider (and `config`) in the user's own `OPENCODE_CONFIG_CONTENT`, and offline: no
    models.dev catalogue, no self-update, and npm offline (OpenCode installs
    `@opencode-ai/plugin` into each config directory at every start, and its first prompt
    waits for that). These three are sandbox settings, not amux's."""
    env = base_env(root)
    return {**env, **made_xdg_dirs(env["HOME"]),
            "OPENCODE_CONFIG_CONTENT": json.dumps({**opencode_provider(model), **(config or {})}),
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "npm_config_offline": "true", **extra}


# -- Kilo Code CLI ---------------------------------------------------------------------------------


def kilo_env(root: Path, model: MockModel, config: dict[str, Any] | None = None,
             **extra: str) -> dict[str, str]:
    """Kilo 7.7.7 against the mock, as `opencode_env` (Kilo is a fork of OpenCode): every XDG
    directory under HOME=root/home, the mock provider (and `config`) in the user's own
    `KILO_CONFIG_CONTENT`, and offline: no models catalogue, no self-update, npm offline
    (Kilo installs `@kilocode/plugin` into each config directory), and no PostHog telemetry
    (unreachable here, its shutdown waits 2 s for it). Sandbox settings, not amux's."""
    env = base_env(root)
    return {**env, **made_xdg_dirs(env["HOME"]),
            "KILO_CONFIG_CONTENT": json.dumps({**opencode_provider(model), **(config or {})}),
            "KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_TELEMETRY_LEVEL": "off", "npm_config_offline": "true", **extra}


# -- Qwen Code -------------------------------------------------------------------------------------


def qwen_env(root: Path, model: MockModel, settings: dict[str, Any] | None = None,
             **extra: str) -> dict[str, str]:
    """Qwen Code 0.24.4 against the mock (Chat Completions): HOME=root/home, the OpenAI auth
    Qwen selects from its three variables (base URL, key, model; no settings needed),
    `settings` (if any) as the user's `~/.qwen/settings.json`, TMPDIR under `root`, and no
    usage statistics (its only outside traffic: a sandbox setting, not amux's)."""
    env = base_env(root)
    if settings is not None:
        config = Path(env["HOME"]) / ".qwen"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps(settings, indent=2))
    scratch = root / "qwen-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    return {**env, "TMPDIR": str(scratch), "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "sk-dummy", "OPENAI_MODEL": "mock-model",
            "QWEN_USAGE_STATISTICS_ENABLED": "false", **extra}


QWEN_EXTRACTOR = "managed memory extraction subagent"
"""In the system message of Qwen's managed auto-memory extractor (a side request)."""


def qwen_is_side(request: Recorded) -> bool:
    """Qwen's side requests on the main model API: the auto-memory extractor and the `auto`
    approval mode's classifier (`tools: [respond_in_schema]`), beside the mock's defaults."""
    if default_is_side(request):
        return True
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else {}
    system = json.dumps(first.get("content")) if isinstance(first, dict) else ""
    return QWEN_EXTRACTOR in system or "respond_in_schema" in request.tool_names


# -- GitHub Copilot CLI ----------------------------------------------------------------------------


def copilot_env(root: Path, model: MockModel, package_cache: Path | None = None,
                **extra: str) -> dict[str, str]:
    """Copilot CLI 1.0.102 against the mock in BYOK mode (no GitHub login: the provider's
    base URL, a key and the model, which BYOK requires), HOME=root/home (its config and
    sessions in `~/.copilot`), TMPDIR under `root`. `package_cache` (COPILOT_PKG_CACHE_HOME)
    is where the executable unpacks its 235 MB package on first start: give every test the
    same directory, as a user's cache is warm after their first run."""
    env = base_env(root)
    scratch = root / "copilot-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    cache = {} if package_cache is None else {"COPILOT_PKG_CACHE_HOME": str(package_cache)}
    return {**env, "TMPDIR": str(scratch), "COPILOT_PROVIDER_BASE_URL": model.base_url,
            "COPILOT_PROVIDER_API_KEY": "sk-dummy", "COPILOT_MODEL": "mock-model", **cache,
            **extra}


# -- Cline ---------------------------------------------------------------------------------


CLINE_DAEMON_PORT = 25463
"""The fixed port of Cline 3.0.65's background hub daemon."""


def cline_providers(model: MockModel) -> dict[str, Any]:
    """The provider settings `cline auth openai-compatible` writes for the mock."""
    return {"version": 1, "lastUsedProvider": "openai-compatible", "providers": {
        "openai-compatible": {"settings": {
            "provider": "openai-compatible", "apiKey": "sk-dummy", "model": "mock-model",
            "baseUrl": model.base_url}, "updatedAt": "2026-12-04T00:00:00.000Z",
            "tokenSource": "manual"}}}


def cline_env(root: Path, model: MockModel, **extra: str) -> dict[str, str]:
    """Cline 3.0.65 against the mock (Chat Completions): HOME=root/home with the provider a
    user configures with `cline auth openai-compatible` (`~/.cline/data/settings/
    providers.json`, its `updatedAt` set, else Cline replaces the file), no update check,
    TMPDIR under `root`. `CLINE_SESSION_BACKEND_MODE` is left to the test: a run of plain
    Cline without it starts the machine's one background daemon."""
    env = base_env(root)
    settings = Path(env["HOME"]) / ".cline" / "data" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "providers.json").write_text(json.dumps(cline_providers(model), indent=2))
    scratch = root / "cline-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    return {**env, "TMPDIR": str(scratch), "CLINE_NO_AUTO_UPDATE": "1", **extra}


def processes_below(root: Path) -> list[int]:
    """The processes whose HOME is below `root` (a test's agent runs, a daemon they left)."""
    found = []
    prefix = f"HOME={root}/".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(entry.startswith(prefix) for entry in environ):
            found.append(int(pid))
    return found
