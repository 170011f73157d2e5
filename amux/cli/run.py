"""`amux run` (SPEC §3, §6): amux's options before AGENT, then the launch
(`amux.launcher.run`)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from amux.adapters import ADAPTERS, grouped
from amux.adapters.base import ENDPOINT_API_OF, ENDPOINT_APIS, url_form
from amux.client.args import strict_parser
from amux.client.cli import report, storage_fault
from amux.client.home import amux_home
from amux.errors import AmuxError, InvalidArgument

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from amux.adapters.base import EndpointRequest

_DESCRIPTION = (
    "Launch a coding agent with amux memory: the binding is resolved once and frozen for the "
    "session, a short fixed protocol joins the agent's own instructions, and the agent's "
    "native auto-memory is turned off for this launch. Adapters: {agents}; any other "
    "command runs unchanged, without memory.")
_EPILOG = (
    "Everything after `--` goes to the agent unchanged, except what amux merges (e.g. "
    "Claude's --append-system-prompt). The agent's own resume flags are refused: use "
    "--resume with the amux session id from `amux sessions list`. "
    "Defaults for new sessions: {settings} ([run] for every agent, [agents.NAME] for one; "
    "keys memory, endpoint, model, endpoint-api, endpoint-key-env, as the options of the "
    "same name), changed with `amux settings set KEY VALUE`, e.g. `amux settings set "
    "run.endpoint http://127.0.0.1:11434/v1`, `amux settings set run.model qwen3`, `amux "
    "settings set agents.claude.memory false`; options given here win, and the dry run "
    "names each default it used (`defaults`).")


def _parser() -> argparse.ArgumentParser:
    agents = ", ".join(ADAPTERS)
    from amux.launcher.settings import settings_path

    parser = strict_parser(prog="amux run", description=_DESCRIPTION.format(agents=agents),
                           epilog=_EPILOG.format(settings=settings_path()),
                           usage="amux run [--dry-run] [--resume ID|last] [--no-memory] "
                           "[--as-user USER [--pass-env NAME]...] [--endpoint URL --model "
                           "NAME [--endpoint-api KIND] [--endpoint-key-env VAR] "
                           "[--no-window-check] | --no-endpoint] [AGENT] [-- ARGS...]")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the launch plan as JSON and start nothing")
    parser.add_argument("--no-memory", action="store_true",
                        help="a new session without amux memory: no protocol, no memory "
                        "tools, and the agent's own memory policy left as it is (the setting "
                        "`memory = false` does it for an agent every time)")
    parser.add_argument("--resume", metavar="ID", help="resume an amux session (its frozen "
                        "binding, protocol and suppression are reused byte for byte); `last`: "
                        "the newest session started in this directory that can be resumed, "
                        "of AGENT when one is named (`amux run --resume last codex`)")
    parser.add_argument("--as-user", metavar="USER",
                        help="run the agent as another Unix user (an isolated run; needs "
                        "root and a Hub with listeners.shared_socket): its own UID, groups "
                        "and home, memory through a private copy of the client")
    parser.add_argument("--pass-env", metavar="NAME", action="append", default=[],
                        help="with --as-user: pass this variable although it looks like a "
                        "credential (repeatable); nothing else of the service's secrets passes")
    parser.add_argument("--endpoint", metavar="URL",
                        help="for this launch only, point the agent at this model endpoint "
                        "(e.g. a local Ollama, vLLM or llama.cpp server); the user's agent "
                        f"config is not edited. Each agent takes its own form: {_forms()}; "
                        "amux puts a URL given in another form right, saying so, and refuses "
                        "a server that does not answer as the agent's API. A user and "
                        "password in the URL reach the agent only (never its argv), and a "
                        "resume needs them again")
    parser.add_argument("--model", metavar="NAME",
                        help="with --endpoint: the model the endpoint serves (default for "
                        "both: the settings' endpoint and model, below)")
    parser.add_argument("--no-endpoint", action="store_true",
                        help="the agent's own model, whatever endpoint the settings give")
    parser.add_argument("--endpoint-api", metavar="KIND", choices=ENDPOINT_APIS,
                        help="with --endpoint: what it speaks, openai (Chat Completions or "
                        "Responses), anthropic (Messages) or gemini (the Gemini API); "
                        f"default: what the agent speaks ({_kinds()})")
    parser.add_argument("--endpoint-key-env", metavar="VAR",
                        help="with --endpoint: the environment variable holding its API key "
                        "(default: none, for a local server); the key is never put in argv")
    parser.add_argument("--no-window-check", action="store_true",
                        help="with --endpoint (or resuming a session that has one): launch "
                        "without comparing the model's context window with the agent's "
                        "first request. By default amux asks the server what window the "
                        "model gets (Ollama, llama.cpp, vLLM, a Gemini API; loading an Ollama "
                        "model for up to 30 s as the agent would) and refuses a window "
                        "smaller than the request, which the server would cut silently, "
                        "naming the setting to raise; this option is for a server that "
                        "misreports its window")
    parser.add_argument("agent", nargs="?", help=f"{agents}, or any command")
    return parser


def _kinds() -> str:
    """"anthropic for claude, openai for codex, opencode and pi, …": each adapter's own."""
    by_kind = grouped(lambda adapter: ENDPOINT_API_OF[adapter.model_api])
    return ", ".join(f"{kind} for {', '.join(names)}" for kind, names in by_kind.items())


def _forms() -> str:
    """"http://HOST:PORT (the server's root) for claude, gemini; …": each adapter's URL
    form for its default API kind."""
    by_form = grouped(lambda adapter: url_form(next(iter(adapter.endpoint_paths.values())))
                      if adapter.endpoint_paths else "")
    return "; ".join(f"{form} for {', '.join(names)}" for form, names in by_form.items()
                     if form)


_SWITCHES = ("--dry-run", "--no-window-check", "--no-memory", "--no-endpoint")
_VALUED = ("--resume", "--as-user", "--pass-env", "--endpoint", "--model", "--endpoint-api",
           "--endpoint-key-env")


def quick_parse(ours: list[str]) -> SimpleNamespace | None:
    """amux's options of a plain `amux run`, as `_parser` would read them; None lets
    argparse decide and explain (help, abbreviations, errors). Importing argparse and
    building its parser (a gettext lookup per help string) would cost every launch
    ~12 ms."""
    values: dict[str, Any] = {"dry_run": False, "no_window_check": False, "no_memory": False,
                              "no_endpoint": False, "resume": None, "as_user": None,
                              "pass_env": [], "endpoint": None, "model": None,
                              "endpoint_api": None, "endpoint_key_env": None, "agent": None}
    index = 0
    while index < len(ours):
        token = ours[index]
        index += 1
        if not token.startswith("-"):
            if values["agent"] is not None:
                return None
            values["agent"] = token
            continue
        if token in _SWITCHES:
            values[token[2:].replace("-", "_")] = True
            continue
        name, equals, value = token.partition("=")
        if name not in _VALUED:
            return None
        if not equals:
            if index == len(ours) or ours[index].startswith("-"):
                return None
            value = ours[index]
            index += 1
        if name == "--pass-env":
            values["pass_env"].append(value)
        elif name == "--endpoint-api" and value not in ENDPOINT_APIS:
            return None
        else:
            values[name[2:].replace("-", "_")] = value
    return SimpleNamespace(**values)


def _endpoint(args: Any) -> EndpointRequest | None:
    """`--endpoint URL --model NAME` as one request, or None; either alone is refused."""
    from urllib.parse import urlsplit

    from amux.adapters.base import EndpointRequest, without_userinfo

    extras = [name for name, value in (("--endpoint-api", args.endpoint_api),
                                       ("--endpoint-key-env", args.endpoint_key_env)) if value]
    if args.endpoint is None and args.model is None:
        if extras:
            raise InvalidArgument(f"{extras[0]} only applies with --endpoint")
        return None
    if args.endpoint is None or args.model is None:
        raise InvalidArgument("--endpoint URL and --model NAME go together: "
                              "the endpoint and the model it serves, e.g. `amux run --endpoint "
                              "http://127.0.0.1:11434/v1 --model qwen3 codex`")
    if not args.endpoint.startswith(("http://", "https://")):
        raise InvalidArgument(f"--endpoint {without_userinfo(args.endpoint)!r}: "
                              "not an http:// or https:// URL")
    if "@" in urlsplit(without_userinfo(args.endpoint)).netloc:
        raise InvalidArgument("--endpoint: percent-encode the user and "
                              "password in its URL (a space as %20, a quote as %22, …): amux "
                              "shows and stores the URL without them, and must tell where they end")
    return EndpointRequest(args.endpoint, args.model, args.endpoint_api,
                           args.endpoint_key_env)


def _with_settings(args: Any, no_memory: str | None,
                   ) -> tuple[Any, str | None, tuple[tuple[str, str], ...]]:
    """A new session's options with the user's settings for its agent filling in what the
    command line left out; why it has no memory, if asked; where each default came from."""
    from amux.launcher import settings

    given = settings.Options(args.endpoint, args.model, args.endpoint_api,
                             args.endpoint_key_env, no_memory, {})
    chosen = settings.apply(settings.load(), os.path.basename(args.agent), given,
                            args.no_endpoint)
    filled = SimpleNamespace(**{**vars(args), "endpoint": chosen.endpoint, "model": chosen.model,
                                "endpoint_api": chosen.endpoint_api,
                                "endpoint_key_env": chosen.endpoint_key_env})
    return filled, chosen.no_memory, tuple(chosen.sources.items())


def run_main(argv: list[str]) -> int:
    """Options before AGENT are amux's; everything after AGENT (and an optional `--`)
    is the agent's, untouched by amux's own parsing."""
    ours, agent_args = argv, []
    for index, arg in enumerate(argv):
        if arg == "--":
            ours, agent_args = argv[:index], argv[index + 1:]
            break
        previous = argv[index - 1] if index else ""
        if not arg.startswith("-") and previous not in _VALUED:
            ours, agent_args = argv[:index + 1], argv[index + 1:]
            if agent_args[:1] == ["--"]:
                agent_args = agent_args[1:]
            break
    try:
        args = quick_parse(ours) or _parser().parse_args(ours)
        if args.pass_env and not args.as_user:
            raise InvalidArgument("--pass-env only applies with --as-user")
        if args.resume is None and args.agent is None:
            raise InvalidArgument("name an AGENT for a new session, or --resume ID")
        given = [name for name, value in (("--endpoint", args.endpoint), ("--model", args.model))
                 if value is not None]
        if args.no_endpoint and (given or args.resume is not None):
            raise InvalidArgument(f"--no-endpoint leaves out the settings' endpoint of a new "
                                  f"session: not with {(given or ['--resume'])[0]}")
        sources: tuple[tuple[str, str], ...] = ()
        no_memory = "--no-memory" if args.no_memory else None
        if args.resume is None and os.path.basename(args.agent) in ADAPTERS:
            args, no_memory, sources = _with_settings(args, no_memory)
        if args.no_window_check and args.endpoint is None and args.resume is None:
            raise InvalidArgument("--no-window-check only applies with --endpoint (or "
                                  "resuming a session that has one)")
        from amux.launcher.run import RunRequest, launch

        return launch(amux_home(), RunRequest(args.agent, agent_args, args.resume,
                                              args.dry_run, args.as_user,
                                              tuple(args.pass_env), _endpoint(args),
                                              window_check=not args.no_window_check,
                                              no_memory=no_memory, defaults=sources))
    except AmuxError as error:  # PlanRefused too: an adapter's refusal is invalid_argument
        return report("amux run", error)
    except OSError as error:  # a full disk on the way (its state, its run directory)
        return report("amux run", storage_fault(error, "amux run"))
