"""What an import asks of the Hub (docs/wire.md): an upsert's `dry_run` checks everything
and writes nothing; its `source` goes into history with the change."""

from __future__ import annotations

from pathlib import Path

from amux.memory.history import History
from tests.hub.apihub import ApiHub

SECRET = "deploy with AKIAIOSFODNN7EXAMPLF\n"


def _hub(tmp_path: Path) -> tuple[ApiHub, History]:
    history = History(tmp_path / "history")
    return ApiHub(tmp_path, history), history


def test_dry_run_checks_and_writes_nothing(tmp_path: Path) -> None:
    hub, history = _hub(tmp_path)
    body = {"path": "a.md", "content": "x\n", "expected_revision": "absent", "dry_run": True}
    answer = hub.call("/v1/memory/upsert", hub.alice, body)
    assert answer.status == 200 and answer.json()["dry_run"] is True
    assert answer.json()["created"] is True
    assert not (tmp_path / "memory" / "global").exists()  # not even the scope's folder
    refused = hub.call("/v1/memory/upsert", hub.alice, {**body, "content": SECRET})
    assert refused.json()["error"]["code"] == "secret_detected"
    hub.call("/v1/memory/upsert", hub.alice, {**body, "dry_run": False})
    stale = hub.call("/v1/memory/upsert", hub.alice, body)
    assert stale.json()["error"]["code"] == "revision_conflict"
    big = hub.call("/v1/memory/upsert", hub.alice, {**body, "path": "b.md",
                                                   "content": "x" * 70000})
    assert big.json()["error"]["quota"] == "document_bytes"
    wrong = hub.call("/v1/memory/upsert", hub.alice, {**body, "dry_run": "yes"})
    assert wrong.json()["error"]["code"] == "invalid_argument"
    history.flush()
    changes = hub.call("/v1/memory/log", hub.alice, {}).json()["changes"]
    assert [change["path"] for change in changes] == ["a.md"]
    history.close()


def test_source_is_kept_in_history_and_checked(tmp_path: Path) -> None:
    hub, history = _hub(tmp_path)
    source = "import claude /home/u/.claude/projects/-home-u-shop/memory/x.md"
    body = {"path": "x.md", "content": "x\n", "expected_revision": "absent", "source": source}
    assert hub.call("/v1/memory/upsert", hub.alice, body).status == 200
    hub.call("/v1/memory/upsert", hub.alice, {"path": "y.md", "content": "y\n",
                                              "expected_revision": "absent"})
    history.flush()
    changes = hub.call("/v1/memory/log", hub.alice, {}).json()["changes"]
    assert changes[1]["source"] == source and "source" not in changes[0]
    listed = hub.call("/v1/memory/list", hub.alice, {"changed": True}).json()["documents"]
    assert listed[0]["changed"]["source"] == source and "source" not in listed[1]["changed"]
    for bad in ("line\nAmux-Principal: bob", "", "x" * 513, 7):
        refused = hub.call("/v1/memory/upsert", hub.alice, {**body, "path": "z.md",
                                                            "source": bad})
        assert refused.json()["error"]["code"] == "invalid_argument", bad
    history.close()
