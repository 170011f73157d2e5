"""amux/doctor/hub.py against a real Hub: running or not (never started), memory off, the
caller's scope, the memory doctor's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amux import __version__
from amux.doctor import Finding, hub
from tests.hubproc import HubProcess


def env_of(home: Path, **more: str) -> dict[str, str]:
    return {"AMUX_HOME": str(home), "HOME": str(home.parent), **more}


def test_without_a_hub_it_says_how_to_start_one_and_starts_none(tmp_path: Path) -> None:
    seen, findings = hub.check(env_of(tmp_path / "home"))
    assert seen == {"hub": {"running": False}, "caller": None, "memory": None}
    [finding] = findings
    assert finding.check == "hub" and finding.fix == "amux hub start"
    assert not (tmp_path / "home").exists()


def test_a_stopped_hub_is_not_running(hub: HubProcess) -> None:
    hub.stop()
    seen, findings = hub_check(hub)
    assert seen["hub"] == {"running": False}
    assert seen["caller"]["connection"] == "local default"
    assert [(f.message, f.fix) for f in findings] == [
        (f"the Hub is not running ({seen['caller']['hub']})", "amux hub start")]


def hub_check(process: HubProcess) -> tuple[dict[str, Any], list[Finding]]:
    return hub.check(env_of(process.home))


def test_memory_off_is_a_problem_naming_the_setting(hub: HubProcess) -> None:
    seen, findings = hub_check(hub)

    def steady(status: dict[str, Any]) -> dict[str, Any]:
        """The status without what changes while a Hub runs: its listeners' connection
        counts, whether its start-up history catch-up is done, its search process."""
        live = {"history_caught_up", "search_process_pid"}
        return {**{k: v for k, v in status.items() if k not in live},
                "listeners": [{k: v for k, v in listener.items() if k != "connections"}
                              for listener in status["listeners"]]}

    assert steady(seen["hub"]) == steady({**hub.status, "client_version": __version__})
    assert seen["memory"] is None
    assert [f.fix for f in findings] == ["amux system config set memory.enabled true"]


def test_with_memory_on_it_reports_the_scope_and_its_health(memory_hub: HubProcess) -> None:
    assert memory_hub.call("/v1/memory/upsert", {"path": "notes/a.md", "content": "Fact.\n",
                                                 "expected_revision": "absent"})[0] == 200
    seen, findings = hub_check(memory_hub)
    assert seen["caller"] == {"connection": "local default",
                              "hub": memory_hub.status["address"],
                              "principal": seen["caller"]["principal"], "binding": "global"}
    memory = seen["memory"]
    assert memory["scope"] == "global" and memory["documents"] >= 1
    assert set(memory) == {"scope", "documents", "bytes", "findings", "by_severity",
                           "truncated", "incomplete"}
    # A file without front matter (a warning) in a scope without MEMORY.md (a note): a
    # note here, which leaves the exit status alone, naming the command that lists them.
    assert memory["findings"] == sum(memory["by_severity"].values()) > 0
    assert "error" not in memory["by_severity"]
    assert [(f.check, f.severity, f.fix) for f in findings] == [
        ("memory", "note", "amux memory doctor")]


def test_a_dead_hub_named_by_amux_hub_says_how_to_use_the_local_one(tmp_path: Path) -> None:
    seen, findings = hub.check(env_of(tmp_path, AMUX_HUB=f"unix:{tmp_path}/none.sock",
                                      AMUX_TOKEN="t"))
    assert seen["caller"]["connection"] == "AMUX_HUB"
    [finding] = findings
    assert finding.fix == "unset AMUX_HUB AMUX_TOKEN" and "does not answer" in finding.message


def test_a_refused_token_names_the_fix(memory_hub: HubProcess, tmp_path: Path) -> None:
    seen, findings = hub.check(env_of(tmp_path, AMUX_HUB=memory_hub.status["address"],
                                      AMUX_TOKEN="not-a-token"))
    assert seen["hub"] == {"running": False}  # not told: it answers no one without a token
    [finding] = findings
    assert finding.check == "caller" and "unauthenticated" in finding.message
    assert finding.fix == "amux principal token NAME"


def test_the_summary_counts_findings_by_severity() -> None:
    result = {"scope": "global", "documents": 3, "bytes": 10, "counts": {"links": 2, "size": 1},
              "findings": [{"severity": "warning"}, {"severity": "error"},
                           {"severity": "warning"}], "truncated": False, "incomplete": False}
    summary = hub.summary(result)
    assert summary["findings"] == 3 and summary["by_severity"] == {"warning": 2, "error": 1}
