"""Claude Code (`claude`): protocol through `--append-system-prompt`, tools over MCP.

- Every `--append-system-prompt` the user passed and the protocol become one
  (the user's text first, unchanged).
- `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1` for this launch only: it removes Claude's
  `# Memory` auto-memory section and stops sub-agent persistent memory.
- The `amux` MCP server is added with its own `--mcp-config` (the user's
  `--mcp-config` values and config files stay: never `--strict-mcp-config`), and
  only the memory tools are pre-allowed.
- That server entry is `"alwaysLoad": true` (the JSON boolean; Claude Code 2.1.332
  drops a server whose value is not a boolean, silently, and ignores other
  spellings): under Claude's default tool search every MCP tool is otherwise
  deferred, named in a system message behind `ToolSearch` without its schema, so
  the model needs an extra round trip before it can read or save memory. Only the
  amux tools are loaded up front; the user's own servers keep their deferral.
  Claude connects an alwaysLoad server before its first request (capped at 5 s).
- New sessions get `--session-id` (a UUID derived from the amux session id), so
  resume is `--resume` with that id; the user's own `--resume`, `--continue`
  and `--session-id` are refused. With the user's `--no-session-persistence`
  (`-p` only) Claude saves nothing: the amux session is recorded as not resumable.
- `--system-prompt-snapshot off`: by default Claude re-sends the system prompt it
  saved on a conversation's first request on every resume, ignoring the flags and
  environment given then; off, it builds the prompt from this launch's (frozen)
  flags, so the suppression and protocol always apply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from amux.adapters.base import (
    MEMORY_TOOLS,
    NO_EXIT_MEANINGS,
    NO_KEY,
    PROMPT,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRequest,
    EndpointWiring,
    FirstRequest,
    Headless,
    LaunchPlan,
    ModelApi,
    NoTerminal,
    Probe,
    RequestSize,
    Requirement,
    chosen_session,
    chosen_uuid,
    endpoint_api,
    first_line_version,
    has_flag,
    ignored_on_resume,
    merge_instructions,
    no_quick_exit_cause,
    no_session_files,
    no_unpacked_code,
    no_user_settings,
    refuse,
    take_option,
    with_endpoint,
)
from amux.envpatch import EnvPatch

_NAMESPACE = "6f6d3b34-61d2-4c1e-9a49-8a7b0f3b9d01"
NO_PERSISTENCE = ("started with Claude Code's --no-session-persistence: Claude saved "
                  "nothing to resume")
DISABLE_AUTO_MEMORY = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
MODEL_VARIABLES = ("ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                   "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                   "ANTHROPIC_DEFAULT_OPUS_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL")
"""Every model Claude Code picks (the main one, titles, sub-agents, aliases): with an
endpoint, all are its model, since it may serve no other."""
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"anthropic": ""}
"""ANTHROPIC_BASE_URL is the server's root: Claude adds `/v1/messages` (a `/v1` given too
reached `/v1/v1/messages`)."""
_NO_UI = frozenset({"-p", "--print", "-h", "--help", "-v", "--version"})


class ClaudeAdapter:
    name = "claude"
    display_name = "Claude Code"
    model_api: ModelApi = "anthropic"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("-p", PROMPT)
    without_terminal: NoTerminal = "fails"
    """It reads a prompt from stdin, and fails when none comes ("Input must be provided")."""
    first_request: FirstRequest | None = FirstRequest(
        "2.1.332", memory=RequestSize(52259, 13065), plain=RequestSize(49265, 12317))
    key_variables = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    instruction_files = ("CLAUDE.md",)
    mcp_tool_prefix: str | None = "mcp__amux__"
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (
        *chosen_session("--session-id", "--resume"),
        Requirement("flag", "--system-prompt-snapshot", "a resumed session would keep its "
                    "first system prompt, not the frozen protocol and suppression"),
        Requirement("flag", "--append-system-prompt", "the memory protocol reaches Claude"),
        Requirement("flag", "--mcp-config", "the memory tools reach Claude"),
        Requirement("flag", "--allowedTools", "the memory tools run without a prompt"),
        Requirement("setting", "alwaysLoad", "the memory tools are loaded up front, not "
                    "deferred behind ToolSearch"),
        Requirement("env", DISABLE_AUTO_MEMORY, "Claude's own auto-memory is turned off"),
        Requirement("env", "CLAUDE_CONFIG_DIR", "an isolated run reads the target user's "
                    "config (it is removed)"),
        Requirement("env", "ANTHROPIC_BASE_URL", "`amux run --endpoint` reaches Claude"),
        Requirement("env", "ANTHROPIC_API_KEY", "`--endpoint-key-env` gives the endpoint its "
                    "key (and the user's Anthropic key is kept from another endpoint)"),
        Requirement("env", "ANTHROPIC_AUTH_TOKEN", "an endpoint without a key (or with a "
                    "bearer token) needs no Claude login"),
        *(Requirement("env", name, "`amux run --model` is the model Claude uses")
          for name in MODEL_VARIABLES),
    )
    package: str | None = "@anthropic-ai/claude-code"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("log in (`claude`, then /login), or set ANTHROPIC_API_KEY, or point it "
                       "at a model server: `amux run --endpoint URL --model NAME claude`")

    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        """Without `-p`, `--help` or `--version` (a subcommand is not told apart)."""
        return not has_flag(args, _NO_UI)

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()  # Claude reads its CLAUDE.md files itself; `plan` merges the flags

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(unset=("CLAUDE_CONFIG_DIR",))  # Claude then reads `<home>/.claude`

    unpacked_code = no_unpacked_code
    session_files = no_session_files
    user_settings = no_user_settings

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        """`<config dir>/projects/<the cwd, slugged>/<id>.jsonl`."""
        config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", "/"), ".claude")
        return os.path.join(config, "projects"), f"{ref}.jsonl"

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--resume", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return chosen_uuid(_NAMESPACE, session_id)

    def headless(self, home: str, scratch: str) -> Headless:
        """`claude -p … --output-format json --permission-mode acceptEdits` (file edits in
        the work directory are allowed, as a user approving them would)."""
        config = os.path.join(home, ".claude")
        return Headless(
            ("-p", PROMPT, "--output-format", "json", "--permission-mode", "acceptEdits"),
            env=EnvPatch({"CLAUDE_CONFIG_DIR": config, "CLAUDE_CODE_TMPDIR": scratch,
                          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                          "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_MAX_RETRIES": "2"}),
            dirs=(config,), answer=json_result)

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--resume", "-r", "--continue", "-c", "--session-id",
                              "--fork-session", "--system-prompt-snapshot"), "Claude Code")
        args, appended = take_option(request.args, ("--append-system-prompt",))
        memory = request.memory
        not_resumable = NO_PERSISTENCE if "--no-session-persistence" in request.args else None
        if memory is None:  # the agent's own policy, untouched; only our session id added
            argv = (request.executable, *self._session(request), *request.args)
            return with_endpoint(LaunchPlan(argv, agent_session=request.agent_session,
                                            not_resumable=not_resumable),
                                 self._endpoint(request.endpoint))
        fresh = merge_instructions(appended, memory.protocol)
        instructions = request.frozen_instructions or fresh
        ignored = ignored_on_resume(request, "--append-system-prompt", appended, fresh)
        server = {"type": "stdio", "command": memory.mcp_command[0],
                  "args": list(memory.mcp_command[1:]), "env": dict(memory.env),
                  "alwaysLoad": True}
        mcp_config = json.dumps({"mcpServers": {"amux": server}}, sort_keys=True)
        allowed = ",".join(f"mcp__amux__{tool}" for tool in MEMORY_TOOLS)
        argv = (request.executable, *self._session(request), "--system-prompt-snapshot", "off",
                f"--append-system-prompt={instructions}", f"--mcp-config={mcp_config}",
                f"--allowedTools={allowed}", *args)
        env = {DISABLE_AUTO_MEMORY: "1"}
        plan = LaunchPlan(argv, env=EnvPatch(env), channel="mcp", instructions=instructions,
                          suppression={"env": env}, agent_session=request.agent_session,
                          not_resumable=not_resumable, warnings=tuple(ignored))
        return with_endpoint(plan, self._endpoint(request.endpoint))

    @staticmethod
    def _endpoint(endpoint: EndpointRequest | None) -> EndpointWiring | None:
        """Claude's base URL and models from the environment. The key goes as
        `ANTHROPIC_API_KEY` (x-api-key), or as a bearer token when it is the user's
        `ANTHROPIC_AUTH_TOKEN`; without one a placeholder token, so no login is needed.
        The other of the two is removed: the user's Anthropic credentials never go to
        another endpoint (a token outranks a key and a login)."""
        if endpoint is None:
            return None
        endpoint_api(endpoint, "Claude Code", ENDPOINT_PATHS,
                     "an Anthropic Messages endpoint (`--endpoint-api anthropic`, the "
                     "default for claude: LiteLLM, vLLM and Ollama serve one); use codex or "
                     "pi for an OpenAI-compatible one")
        env = {"ANTHROPIC_BASE_URL": endpoint.url,
               **dict.fromkeys(MODEL_VARIABLES, endpoint.model)}
        token = endpoint.key_env in (None, "ANTHROPIC_AUTH_TOKEN")
        name = "ANTHROPIC_AUTH_TOKEN" if token else "ANTHROPIC_API_KEY"
        if endpoint.key_env is None:
            env[name] = NO_KEY
        return EndpointWiring(env=EnvPatch(
            env, unset=("ANTHROPIC_API_KEY" if token else "ANTHROPIC_AUTH_TOKEN",),
            copy={} if endpoint.key_env is None else {name: endpoint.key_env}))

    @staticmethod
    def _session(request: AgentRequest) -> list[str]:
        if request.agent_session is None:
            return []
        flag = "--resume" if request.resume else "--session-id"
        return [flag, request.agent_session]


def json_result(stdout: str) -> str:
    """The answer in `--output-format json`'s output: the last line's `result`."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("result"), str):
            return str(value["result"])
    return stdout.strip()
