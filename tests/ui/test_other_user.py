"""Another local Unix user who finds the page's port gets nothing: not the key, not data,
no change made (a real second user, root only: CI runs as root)."""

from __future__ import annotations

import json
import subprocess
import textwrap

from tests.hostile import as_user, throwaway_user
from tests.hubproc import HubProcess
from tests.pageclient import PageClient

PROBE = textwrap.dedent('''
    import http.client, json, os, sys
    port, record = int(sys.argv[1]), sys.argv[2]
    found = {}
    try:
        open(record).read()
        found["record"] = "read"
    except OSError as error:
        found["record"] = type(error).__name__
    def ask(method, path, body=None, **headers):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request(method, path, body, {"Host": f"127.0.0.1:{port}",
                           "Origin": f"http://127.0.0.1:{port}",
                           "Content-Type": "application/json", **headers})
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    found["shell"] = ask("GET", "/")[0]
    found["read"] = ask("POST", "/api/read", json.dumps({"path": "private.md"}))
    found["guess"] = ask("POST", "/api/read", json.dumps({"path": "private.md"}),
                         **{"X-Amux-Key": "A" * 43})
    found["save"] = ask("POST", "/api/save", json.dumps({"path": "private.md",
                        "content": "pwned", "expected_revision": "absent"}))
    print(json.dumps(found))
''')


def test_another_local_user_gets_nothing(page_hub: HubProcess, ui: PageClient) -> None:
    status, _ = page_hub.call("/v1/memory/upsert", {
        "path": "private.md", "content": "owner's secret plan\n", "expected_revision": "absent"})
    assert status == 200
    with throwaway_user("amuxt-ui") as other:
        probe = as_user(other, "/usr/bin/python3", "-I", "-c", PROBE, str(ui.port),
                        str(page_hub.home / "run" / "ui.json"), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, cwd="/")
        out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    found = json.loads(out)
    assert found["record"] == "PermissionError"
    assert found["shell"] == 200  # the empty shell: no data in it
    for name in ("read", "guess", "save"):
        status, body = found[name]
        assert status == 401, found
        assert "secret plan" not in body
    _, current = page_hub.call("/v1/memory/get", {"path": "private.md"})
    assert current["content"] == "owner's secret plan\n"
