"""Whatever a request to the page carries, the answer is the Hub's answer or a clear error,
never a crash, and nothing is written that was not asked for."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amux.ui.page import OPERATIONS
from tests.hubproc import HubProcess
from tests.pageclient import PageClient

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=40) | st.sampled_from(["absent", "global", "../x.md", "a.md", "0" * 64]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)
FIELDS = sorted({name for operation in OPERATIONS.values()
                 for name in operation.required | operation.optional} | {"bogus"})
BODIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=5)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(set(OPERATIONS) - {"wait", "switch"})), body=BODIES)
def test_any_body_gets_an_answer_or_a_clear_error(page_hub: HubProcess, ui: PageClient,
                                                  name: str, body: dict[str, Any]) -> None:
    _, before = page_hub.call("/v1/memory/log", {"limit": 1})
    status, answer = ui.api(name, body)
    if status != 200:
        assert set(answer) == {"error"}, answer
        assert answer["error"]["code"] != "internal" and status < 500, (status, answer)
        assert answer["error"]["message"]
    _, after = page_hub.call("/v1/memory/log", {"limit": 1})
    if after != before:  # a write happened: only one that was asked for, and answered
        assert name in ("save", "restore", "forget") and status == 200, (name, body, answer)
    json.dumps(answer)
