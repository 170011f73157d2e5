"""`amux memory …` as a real process against a real Hub process (SPEC §3, Appendix A)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
