"""`amux eval live`: the live evaluation of an agent and a model with amux memory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from amux.adapters.base import ModelApi

_DESCRIPTION = (
    "Run the memory scenarios (remember and recall, correct, forget, injected text in "
    "memory, an ordinary task, a user-identity fact) through `amux run` with the real "
    "agent CLI pointed at your model endpoint, on a temporary AMUX_HOME and Hub (your own "
    "memory is never touched), N samples each; classify every sample and print pass "
    "rates, and beside them the rates of notes in the note guide's format, duplicates, "
    "relative dates kept, inverted, invented and wrong place. Before the run the agent's "
    "first request is measured and checked against the endpoint's context window "
    "(Ollama's is read from the server).")
_EPILOG = (
    "Base URL: what the agent itself takes: {bases}. Progress goes to standard error (a "
    "bar on a terminal, a line per sample otherwise), the summary to standard output. "
    "Exit status: 0 the evaluation ran and its results stand, whatever the pass rates; "
    "1 it could not run (agent not found, the --json FILE cannot be written, nothing "
    "answers at the endpoint, the agent sent no request, the evaluation's Hub failed); "
    "2 usage; 3 the endpoint's context "
    "window does not hold the agent's prompt: refused before any sample ran, or the run "
    "finished but the endpoint's prompt counts show the prompt was truncated, so the "
    "results (still printed and written) do not measure the model. See docs/eval.md.")


def _parser() -> argparse.ArgumentParser:
    from amux.adapters import ADAPTERS
    from amux.eval.live import DEFAULT_SAMPLES, DEFAULT_TIMEOUT
    from amux.eval.scenarios import BY_NAME

    parser = argparse.ArgumentParser(prog="amux eval", description="Evaluations of amux "
                                     "memory with real agents and models.")
    commands = parser.add_subparsers(dest="command", required=True)
    live = commands.add_parser("live", description=_DESCRIPTION,
                               epilog=_EPILOG.format(bases=_bases()),
                               help="the live evaluation against a model endpoint")
    live.add_argument("--agent", required=True, choices=tuple(ADAPTERS),
                      help="the agent CLI to evaluate: " + ", ".join(ADAPTERS))
    live.add_argument("--endpoint", "--base-url", required=True, metavar="URL",
                      dest="base_url", help="the model endpoint, as `amux run --endpoint` "
                      "takes it (--base-url: the same)")
    live.add_argument("--model", required=True, metavar="NAME",
                      help="the model name the endpoint serves")
    live.add_argument("--samples", type=_positive, default=DEFAULT_SAMPLES, metavar="N",
                      help=f"samples per scenario, each in fresh sessions "
                      f"(default {DEFAULT_SAMPLES})")
    live.add_argument("--json", type=Path, metavar="FILE", dest="json_path",
                      help="write the full report (every sample's evidence) as JSON")
    live.add_argument("--agent-bin", metavar="PATH",
                      help="the agent's executable (default: on PATH, else "
                      "fixtures/npm/node_modules/.bin in an amux checkout)")
    live.add_argument("--endpoint-key-env", "--api-key-env", metavar="NAME",
                      dest="api_key_env", help=f"the variable holding the endpoint's key "
                      f"(default {_default_keys()}; none needed for a local endpoint; "
                      "--api-key-env: the same)")
    live.add_argument("--scenario", action="append", default=[], choices=sorted(BY_NAME),
                      metavar="NAME", help="run only this scenario (repeatable): "
                      + ", ".join(BY_NAME))
    live.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                      help=f"time one session may take (default {DEFAULT_TIMEOUT:.0f})")
    live.add_argument("--keep", type=Path, metavar="DIR",
                      help="keep every session's work directory and agent home under DIR")
    return parser


_BASES: dict[ModelApi, str] = {
    "anthropic": "the Anthropic API root (e.g. https://api.anthropic.com or "
                 "http://localhost:11434)",
    "responses": "the OpenAI-compatible base (e.g. http://localhost:11434/v1)",
    "chat": "the OpenAI-compatible base (e.g. http://localhost:11434/v1)",
    "gemini": "a Gemini API server's root (e.g. https://generativelanguage.googleapis.com)",
}


def _bases() -> str:
    """"the Anthropic API root (…) for Claude Code; the OpenAI-compatible base (…) for …"."""
    from amux.adapters import ADAPTERS, grouped

    return "; ".join(f"{base} for {_listed([ADAPTERS[name].display_name for name in names])}"
                     for base, names in grouped(lambda agent: _BASES[agent.model_api]).items())


def _default_keys() -> str:
    """"ANTHROPIC_API_KEY for claude, OPENAI_API_KEY for codex, opencode, pi and qwen, …"."""
    from amux.adapters import grouped

    return ", ".join(f"{variable} for {_listed(names)}" for variable, names
                     in grouped(lambda agent: agent.key_variables[0]).items())


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def eval_main(argv: list[str]) -> int:
    """`amux eval ARGS` (ARGS without `eval`); the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2), already printed
        return done.code if isinstance(done.code, int) else 2
    from amux.errors import AmuxError
    from amux.eval.live import EXIT_FAILED, LiveOptions, run_live
    from amux.eval.workspace import HarnessError

    options = LiveOptions(agent=args.agent, base_url=args.base_url, model=args.model,
                          samples=args.samples, json_path=args.json_path,
                          agent_bin=args.agent_bin, api_key_env=args.api_key_env,
                          scenarios=tuple(dict.fromkeys(args.scenario)),
                          timeout=args.timeout, keep=args.keep)
    try:
        code, _ = run_live(options)
    except HarnessError as error:
        print(f"amux eval: {error}", file=sys.stderr)
        return EXIT_FAILED
    except AmuxError as error:  # the evaluation's own Hub failed under it
        print(f"amux eval: the evaluation's Hub: {error.code}: {error.message}",
              file=sys.stderr)
        return EXIT_FAILED
    return code
