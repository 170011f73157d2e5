"""Pi's adapter: what Pi itself would append (its `APPEND_SYSTEM.md`, the files its
`--append-system-prompt` names), read through a fake `Probe` as Pi 0.73.1 reads them, and
its ephemeral `--no-session`. The real Pi runs in tests/e2e/test_pi.py."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from amux.adapters.base import AgentRequest, LaunchPlan, Memory, PlanFile, ResumeFlagRefused
from amux.adapters.pi import EPHEMERAL, PiAdapter
from amux.protocol.render import render
from tests.adapting import FakeProbe

PI = PiAdapter()
CWD = "/work/project"
PROJECT = f"{CWD}/.pi/APPEND_SYSTEM.md"
GLOBAL = "/home/u/.pi/agent/APPEND_SYSTEM.md"
SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
MEMORY = Memory(protocol=render("cli"), mcp_command=("/opt/amux", "memory", "mcp"),
                env={"AMUX_MEMORY_CONFIG": "/run/s/memory.json"}, bin_dir="/run/s/bin")


class Probe(FakeProbe):
    """A FakeProbe whose files may also be an error to raise, as the real one does."""

    def read_text(self, path: str) -> str | None:
        found = self.files.get(path)
        if isinstance(found, OSError):
            raise found
        return super().read_text(path)


def appended(args: tuple[str, ...], files: Mapping[str, str | OSError],
             **env: str) -> tuple[str, ...]:
    probe = Probe(dict(files), env={"HOME": "/home/u", **env}, cwd=CWD)  # type: ignore[arg-type]
    return PI.user_instructions(args, probe)


def test_the_projects_append_system_md_comes_first_and_alone() -> None:
    both = {PROJECT: "Project rules.\n", GLOBAL: "Global rules.\n"}
    assert appended(("-p", "hi"), both) == ("Project rules.\n",)  # Pi reads only the first
    assert appended(("-p", "hi"), {GLOBAL: "Global rules.\n"}) == ("Global rules.\n",)
    assert appended(("-p", "hi"), {}) == ()


def test_the_global_file_is_in_pi_coding_agent_dir() -> None:
    files = {"/cfg/pi/APPEND_SYSTEM.md": "From the agent dir.", GLOBAL: "Not this one."}
    assert appended((), files, PI_CODING_AGENT_DIR="/cfg/pi") == ("From the agent dir.",)
    tilde = {"/home/u/pi-agent/APPEND_SYSTEM.md": "Tilde expanded."}
    assert appended((), tilde, PI_CODING_AGENT_DIR="~/pi-agent") == ("Tilde expanded.",)


def test_a_flag_naming_a_file_is_its_text_and_flags_join_with_a_blank_line() -> None:
    files = {f"{CWD}/extra.md": "From a file.\n", "/abs/rules.md": "Absolute.",
             PROJECT: "Never read: a flag turns Pi's discovery off."}
    args = ("--append-system-prompt", "extra.md", "-p", "--append-system-prompt", "Literal.",
            "--append-system-prompt", "/abs/rules.md", "hi")
    assert appended(args, files) == ("From a file.\n\n\nLiteral.\n\nAbsolute.",)


def test_flag_values_pi_would_not_read_as_files() -> None:
    files: dict[str, str | OSError] = {f"{CWD}/adir": IsADirectoryError(21, "Is a directory"),
                                        PROJECT: "Unused."}
    assert appended(("--append-system-prompt", "adir"), files) == ("adir",)  # Pi: warns
    assert appended(("--append-system-prompt", ""), files) == ()  # dropped, still no discovery
    # Another option's value is not a flag, and the `=` form is no option of Pi's.
    assert appended(("--model", "--append-system-prompt", "x"), files) == ("Unused.",)
    assert appended(("--append-system-prompt=x",), files) == ("Unused.",)


def test_an_unreadable_append_system_md_is_named() -> None:
    files: dict[str, str | OSError] = {PROJECT: PermissionError(13, "Permission denied")}
    with pytest.raises(ValueError, match=r"cannot read Pi's /work/project/\.pi/APPEND_SYSTEM"):
        appended((), files)
    not_a_dir: dict[str, str | OSError] = {PROJECT: NotADirectoryError(20, "Not a directory"),
                                            GLOBAL: "Global."}
    assert appended((), not_a_dir) == ("Global.",)  # `.pi` is a file: Pi looks further


def plan(*args: str, user: tuple[str, ...] = (), memory: Memory | None = MEMORY,
         resume: bool = False, frozen: str | None = None) -> LaunchPlan:
    return PI.plan(AgentRequest(
        executable="/usr/bin/pi", args=args, memory=memory, user_instructions=user,
        frozen_instructions=frozen, agent_session=f"{SESSION_DIR}/pi-session.jsonl",
        resume=resume, files_dir=SESSION_DIR))


def test_the_merged_text_goes_to_pi_as_a_file() -> None:
    launch = plan("-p", "--append-system-prompt", "extra.md", "hi", user=("From a file.",))
    path = f"{SESSION_DIR}/pi-append-system.md"
    assert launch.instructions == f"From a file.\n\n{render('cli')}"
    assert launch.files == (PlanFile(path, launch.instructions or ""),)
    assert launch.argv == ("/usr/bin/pi", "--session", f"{SESSION_DIR}/pi-session.jsonl",
                           "--append-system-prompt", path, "-p", "hi")
    again = plan("-p", "--append-system-prompt", "other.md", "more", resume=True,
                 frozen=launch.instructions)
    assert again.files == launch.files  # rewritten from the frozen text on every launch
    no_dir = PI.plan(AgentRequest(executable="/usr/bin/pi", args=(), memory=MEMORY))
    assert no_dir.files == () and no_dir.argv[-1] == no_dir.instructions


@pytest.mark.parametrize("memory", [MEMORY, None])
def test_no_session_is_ephemeral_and_never_resumable(memory: Memory | None) -> None:
    launch = plan("--no-session", "-p", "hi", memory=memory)
    assert "--session" not in launch.argv and "--no-session" in launch.argv
    assert launch.agent_session is None
    assert launch.not_resumable == EPHEMERAL and "ephemeral" in EPHEMERAL
    assert plan("-p", "hi", memory=memory).not_resumable is None


def test_no_session_on_resume_and_fork_are_refused() -> None:
    with pytest.raises(ResumeFlagRefused, match="ephemeral"):
        plan("--no-session", resume=True, frozen="x")
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan("--fork", "abc")
