"""`amux memory …` as a real process against a real Hub process (SPEC §3, Appendix A)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from tests.cli.script import SCRIPT, console
from tests.hubproc import HubProcess, amux


def test_crud_search_export(memory_hub: HubProcess) -> None:
    home = memory_hub.home
    code, put, _ = amux(home, "memory", "upsert", "projects/demo/notes.md",
                        "--expected-revision", "absent", stdin="# Notes\nUse pytest.\n记忆\n")
    assert code == 0 and put["created"] is True
    code, found, _ = amux(home, "memory", "search", "PYTEST", "记忆", "--prefix", "projects")
    assert code == 0 and found["results"][0]["matched_terms"] == ["PYTEST", "记忆"]
    code, page, _ = amux(home, "memory", "show", "projects/demo/notes.md", "--start-line", "2",
                         "--end-line", "2")
    assert (code, page["content"]) == (0, "Use pytest.\n")
    big = "".join(f"line {i} " + "z" * 80 + "\n" for i in range(400))  # several pages
    source = home / "big.md"
    source.write_text(big)
    code, put_big, _ = amux(home, "memory", "upsert", "big.md", "--expected-revision", "absent",
                            "--file", str(source))
    assert code == 0
    environment = {**os.environ, "AMUX_HOME": str(home)}
    exported = subprocess.run([sys.executable, "-m", "amux", "memory", "export", "big.md"],
                              capture_output=True, env=environment, check=True)
    assert exported.stdout == big.encode()
    code, gone, _ = amux(home, "memory", "forget", "big.md", "--expected-revision",
                         put_big["revision"])
    assert (code, gone) == (0, {"path": "big.md", "deleted": True})


def test_errors_are_json_plus_one_line_and_exit_codes(
    memory_hub: HubProcess, tmp_path: Path
) -> None:
    home = memory_hub.home
    amux(home, "memory", "upsert", "a.md", "--expected-revision", "absent", stdin="one\n")
    cases = [
        (("memory", "upsert", "a.md", "--expected-revision", "absent"), "two\n", 3,
         "revision_conflict"),
        (("memory", "show", "../a.md"), None, 2, "invalid_path"),
        (("memory", "show"), None, 2, "invalid_argument"),
        (("memory", "export", "missing.md"), None, 1, "not_found"),
        (("memory", "search", "x", "--limit", "21"), None, 2, "invalid_argument"),
    ]
    for args, stdin, exit_code, error_code in cases:
        code, out, err = amux(home, *args, stdin=stdin)
        assert (code, out["error"]["code"]) == (exit_code, error_code), args
        assert err.count("\n") == 1 and error_code in err
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\xff\xfe")
    code, out, _ = amux(home, "memory", "upsert", "b.md", "--expected-revision", "absent",
                        "--file", str(bad))
    assert (code, out["error"]["code"]) == (2, "not_utf8")
    forged = {"AMUX_HUB": f"unix:{memory_hub.socket_path}", "AMUX_TOKEN": "amux_" + "x" * 43}
    code, out, _ = amux(home, "memory", "show", "a.md", env=forged)
    assert (code, out["error"]["code"]) == (5, "unauthenticated")
    off = {"action": "set", "key": "memory.enabled", "value": "false"}
    memory_hub.call("/v1/admin/config", off)
    code, out, _ = amux(home, "memory", "show", "a.md")
    assert (code, out["error"]["code"]) == (4, "memory_disabled")


def test_unreachable_hub_exits_4(tmp_path: Path) -> None:
    code, out, _ = amux(tmp_path, "memory", "show", "a.md",
                        env={"AMUX_HUB": f"unix:{tmp_path}/no.sock", "AMUX_TOKEN": "t"})
    assert (code, out["error"]["code"]) == (4, "hub_unreachable")


def test_list_for_people(memory_hub: HubProcess) -> None:
    home = memory_hub.home
    for name in ("p/a.md", "p/b.md", "q.md"):
        amux(home, "memory", "upsert", name, "--expected-revision", "absent", stdin="x\n")
    code, listed, _ = amux(home, "memory", "list", "p")
    assert code == 0 and [d["path"] for d in listed["documents"]] == ["p/a.md", "p/b.md"]
    code, one, _ = amux(home, "memory", "list", "--limit", "1")
    assert (len(one["documents"]), one["truncated"]) == (1, True)


def test_memory_disabled_names_the_command_that_turns_it_on(hub: HubProcess) -> None:
    done = console(hub.home, "memory", "search", "x")
    assert done.returncode == 4
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "memory_disabled" and "files are kept" in error["message"]
    fix = error["message"].partition("turns it on with: ")[2]
    assert fix == "amux system config set memory.enabled true"
    assert done.stderr == f"amux memory: memory_disabled: {error['message']}\n"
    assert console(hub.home, *fix.split()[1:]).returncode == 0
    assert console(hub.home, "memory", "search", "x").returncode == 0


def test_pretty_is_accepted_after_the_command(memory_hub: HubProcess) -> None:
    home = memory_hub.home
    amux(home, "memory", "upsert", "p/a.md", "--expected-revision", "absent",
         stdin="# A\nuse pytest\n")
    for args in (("search", "pytest", "--pretty"), ("search", "--pretty", "pytest"),
                 ("search", "pytest", "--prefix", "p", "--pretty")):
        done = console(home, "memory", *args)
        assert done.returncode == 0, done.stderr
        assert "p/a.md" in done.stdout and "1 files scanned" in done.stdout
    done = console(home, "memory", "show", "p/a.md", "--pretty")
    assert done.returncode == 0 and "lines 1-2 of 2" in done.stdout
    before = console(home, "--pretty", "memory", "show", "p/a.md")  # before the group too
    assert before.returncode == 0 and before.stdout == done.stdout
    literal = console(home, "memory", "search", "pytest", "--", "--pretty")
    assert json.loads(literal.stdout)["results"][0]["matched_terms"] == ["pytest"]
    refused = console(home, "memory", "search", "x", "--prefix", "--pretty")
    assert refused.returncode == 2
    assert refused.stderr == ("amux memory search: invalid_argument: argument --prefix: "
                              "expected one argument\n")


def test_upsert_at_a_terminal_says_it_reads_stdin(memory_hub: HubProcess) -> None:
    controller, terminal = pty.openpty()
    environment = {**os.environ, "AMUX_HOME": str(memory_hub.home)}
    try:
        child = subprocess.Popen([SCRIPT, "memory", "upsert", "t.md", "--expected-revision",
                                  "absent"], stdin=terminal, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=environment)
        assert child.stderr is not None
        assert select.select([child.stderr], [], [], 30)[0], "no notice: it waits silently"
        notice = child.stderr.readline()  # before anything is typed
        assert notice == ("amux memory upsert: reading the document from stdin; end it with "
                          "Ctrl-D on a line of its own (or pass --file FILE)\n")
        os.write(controller, b"# Typed\nat a terminal\n\x04")
        out, err = child.communicate(timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert (child.returncode, err) == (0, ""), err
    assert json.loads(out)["created"] is True
    page = amux(memory_hub.home, "memory", "show", "t.md")[1]
    assert page["content"] == "# Typed\nat a terminal\n"
    piped = console(memory_hub.home, "memory", "upsert", "u.md", "--expected-revision",
                    "absent", stdin="piped\n")
    assert (piped.returncode, piped.stderr) == (0, "")


def test_show_of_a_missing_document_is_said_naming_near_names(
        memory_hub: HubProcess) -> None:
    """`amux memory show memory.md` exited 0 with empty content and nothing on stderr (a
    wrong case), while export said not_found. Now the person is told, naming the near
    documents: `show`'s JSON stays the agent-facing `exists: false` (exit 0) with the
    line on stderr; `show --pretty` and `export` are `not_found`."""
    home = memory_hub.home
    for name in ("MEMORY.md", "notes/deploy.md"):
        amux(home, "memory", "upsert", name, "--expected-revision", "absent", stdin="x\n")
    for command in ("show --pretty", "export", "show"):
        for path, line in (
                ("memory.md", "memory.md does not exist; did you mean MEMORY.md?"),
                ("notes/deplyo.md", "notes/deplyo.md does not exist; did you mean "
                 "notes/deploy.md?"),
                ("zzz/qqq.md", "zzz/qqq.md does not exist (upsert creates it with "
                 "--expected-revision absent; `amux memory list` lists your documents)")):
            done = console(home, "memory", *command.split(), path)
            if command == "show":  # the contract agents and scripts read, plus the line
                assert done.returncode == 0, path
                assert json.loads(done.stdout)["exists"] is False
                assert done.stderr == f"amux memory show: {line}\n"
                continue
            assert done.returncode == 1, (command, path)
            if command == "export":
                assert json.loads(done.stdout)["error"] == {"code": "not_found",
                                                            "message": line}
            assert done.stderr == f"amux memory: not_found: {line}\n"
    assert memory_hub.call("/v1/memory/get", {"path": "memory.md"})[1]["exists"] is False
