"""The scripted mock model: its API formats and matching rule, then one real run of each agent.

The smoke tests drive the real CLIs (fixtures/npm) against the mock: Pi runs a bash tool
call; Claude and Codex each call `memory_upsert` on the real MCP server (`amux memory mcp`)
backed by a real Hub, and the document lands in the Hub.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

from amux.runtimes.codex_appserver import MEMORY_OFF_OVERRIDES
from tests.hubproc import HubProcess
from tests.mockmodel import EXHAUSTED, SIDE_ANSWER, MockModel, Text, ToolCall, mcp
from tests.mockmodel.agents import (
    amux_env,
    amux_mcp_argv,
    claude_env,
    claude_mcp_config,
    codex_env,
    codex_mcp_overrides,
    pi_env,
    run_agent,
)
from tests.peers import npm_bin


def post(model: MockModel, path: str, body: Any,
         headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of one POST to the mock."""
    connection = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
    try:
        connection.request("POST", path, json.dumps(body),
                           {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        connection.close()


def events(payload: bytes) -> list[tuple[str | None, Any]]:
    """SSE events as (event name or None, parsed data or the raw `[DONE]`)."""
    parsed = []
    for chunk in payload.decode().split("\n\n"):
        if not chunk.strip():
            continue
        name, data = None, ""
        for line in chunk.split("\n"):
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
        parsed.append((name, data if data == "[DONE]" else json.loads(data)))
    return parsed


# -- the model API formats and the matching rule, without an agent ----------------------------


def anthropic_body(messages: list[Any], tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": messages,
                            "system": [{"type": "text", "text": "one"},
                                       {"type": "text", "text": "two"}]}
    if tools:
        body["tools"] = [{"name": "mcp__amux__memory_search", "input_schema": {}}]
    return body


def test_anthropic_tool_use_then_text_on_the_tool_result() -> None:
    search = mcp("memory_search", {"query": "deploy"})
    with MockModel([search, Text("found it")]) as model:
        user = {"role": "user", "content": "find"}
        status, kind, payload = post(model, "/v1/messages?beta=true", anthropic_body([user]))
        assert (status, kind) == (200, "text/event-stream")
        stream = events(payload)
        assert [name for name, _ in stream] == [
            "message_start", "content_block_start", "content_block_delta",
            "content_block_stop", "message_delta", "message_stop"]
        block = stream[1][1]["content_block"]
        assert block == {"type": "tool_use", "id": "toolu_mock_0_0",
                         "name": "mcp__amux__memory_search", "input": {}}
        assert stream[2][1]["delta"] == {"type": "input_json_delta",
                                         "partial_json": '{"query":"deploy"}'}
        assert stream[4][1]["delta"]["stop_reason"] == "tool_use"

        result = {"type": "tool_result", "tool_use_id": "toolu_mock_0_0",
                  "content": [{"type": "text", "text": "RESULT"}]}
        assistant = {"role": "assistant", "content": [{**block, "input": {"query": "deploy"}}]}
        followed = anthropic_body([user, assistant, {"role": "user", "content": [result]}])
        stream = events(post(model, "/v1/messages", followed)[2])
        assert stream[2][1]["delta"] == {"type": "text_delta", "text": "found it"}
        assert stream[4][1]["delta"]["stop_reason"] == "end_turn"

        first, second = model.main()
        assert (first.conversation, first.step, first.reply) == (0, 0, search)
        assert (second.conversation, second.step, second.reply) == (0, 1, Text("found it"))
        assert first.query == "beta=true" and first.headers["content-type"] == "application/json"
        assert first.instructions == "one\n\ntwo"
        [answered] = model.tool_results("memory_search")
        assert (answered.call, answered.text, answered.request) == (search, "RESULT", 1)


def test_responses_function_call_carries_the_namespace() -> None:
    with MockModel([mcp("memory_upsert", {"path": "a.md"}), Text("saved")]) as model:
        body: dict[str, Any] = {"model": "m", "stream": True, "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "base"}]},
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "DEV"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "save"}]}]}
        stream = events(post(model, "/v1/responses", body)[2])
        names = [name for name, _ in stream]
        assert names[0] == "response.created" and names[-1] == "response.completed"
        assert [data["sequence_number"] for _, data in stream] == list(range(len(stream)))
        done = next(data for name, data in stream if name == "response.output_item.done")
        assert done["item"] | {"id": None} == {
            "type": "function_call", "id": None, "call_id": "call_mock_0_0",
            "name": "memory_upsert", "namespace": "mcp__amux",
            "arguments": '{"path":"a.md"}', "status": "completed"}
        assert stream[-1][1]["response"]["usage"]["total_tokens"] > 0

        body["input"] += [done["item"], {"type": "function_call_output",
                                         "call_id": "call_mock_0_0", "output": "OK"}]
        stream = events(post(model, "/v1/responses", body)[2])
        message = next(data["item"] for name, data in stream
                       if name == "response.output_item.done")
        assert message["type"] == "message" and message["role"] == "assistant"
        assert message["content"][0] == {"type": "output_text", "text": "saved",
                                         "annotations": []}
        assert [r.step for r in model.main()] == [0, 1]
        assert model.main()[0].instruction_parts == ["base", "DEV"]
        assert model.tool_results()[0].text == "OK"


def test_chat_completions_tool_calls_then_text_and_done() -> None:
    with MockModel([ToolCall("bash", {"command": "true"}), Text("done")]) as model:
        messages: list[Any] = [{"role": "system", "content": "SYS"},
                               {"role": "user", "content": "go"}]
        stream = events(post(model, "/v1/chat/completions",
                             {"model": "m", "stream": True, "messages": messages})[2])
        assert stream[-1] == (None, "[DONE]")
        call = stream[0][1]["choices"][0]["delta"]["tool_calls"][0]
        assert (call["id"], call["function"]["name"]) == ("call_mock_0_0", "bash")
        assert stream[1][1]["choices"][0]["delta"]["tool_calls"][0]["function"] == {
            "arguments": '{"command":"true"}'}
        assert stream[2][1]["choices"][0]["finish_reason"] == "tool_calls"
        assert stream[3][1]["choices"] == [] and "usage" in stream[3][1]

        messages += [{"role": "assistant", "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": "call_mock_0_0", "content": "(no output)"}]
        stream = events(post(model, "/v1/chat/completions",
                             {"model": "m", "stream": True, "messages": messages})[2])
        text = "".join(chunk["choices"][0]["delta"].get("content") or ""
                       for _, chunk in stream[:-1] if chunk["choices"])
        assert text == "done"
        assert model.main()[1].instructions == "SYS"


def gemini_body(contents: list[Any], tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": contents, "generationConfig": {"temperature": 1},
                            "systemInstruction": {"parts": [{"text": "one"}, {"text": "two"}]}}
    if tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": "read_file", "parametersJsonSchema": {}},
            {"name": "mcp_amux_memory_search", "parametersJsonSchema": {}}]}]
    return body


def test_gemini_function_call_then_text_on_the_function_response() -> None:
    search = mcp("memory_search", {"query": "deploy"})
    with MockModel([search, Text("found it")]) as model:
        user = {"role": "user", "parts": [{"text": "find"}]}
        path = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
        status, kind, payload = post(model, path, gemini_body([user]))
        assert (status, kind) == (200, "text/event-stream")
        stream = events(payload)
        assert [name for name, _ in stream] == [None, None]
        [part] = stream[0][1]["candidates"][0]["content"]["parts"]
        assert part == {"functionCall": {"id": "call_mock_0_0", "name": "mcp_amux_memory_search",
                                         "args": {"query": "deploy"}}}
        assert stream[1][1]["candidates"][0]["finishReason"] == "STOP"
        assert stream[1][1]["usageMetadata"]["totalTokenCount"] > 0

        # Gemini CLI 0.61.0 sends the call id back prefixed with the tool's name.
        call = {"role": "model", "parts": [part]}
        answer = {"role": "user", "parts": [{"functionResponse": {
            "id": "mcp_amux_memory_search__call_mock_0_0", "name": "mcp_amux_memory_search",
            "response": {"output": "RESULT"}}}]}
        stream = events(post(model, path, gemini_body([user, call, answer]))[2])
        assert stream[0][1]["candidates"][0]["content"]["parts"] == [{"text": "found it"}]

        first, second = model.main()
        assert (first.api, first.conversation, first.step, first.reply) == (
            "gemini", 0, 0, search)
        assert (second.conversation, second.step) == (0, 1)
        assert first.query == "alt=sse" and first.instruction_parts == ["one", "two"]
        assert first.tool_names == ["read_file", "mcp_amux_memory_search"]
        [answered] = model.tool_results("memory_search")
        assert (answered.call_id, answered.text, answered.is_error, answered.request) == (
            "call_mock_0_0", "RESULT", False, 1)


def test_gemini_generate_content_is_one_document_and_json_requests_get_json() -> None:
    with MockModel([ToolCall("run_shell_command", {"command": "true"}), Text("done")]) as model:
        user = {"role": "user", "parts": [{"text": "go"}]}
        status, kind, payload = post(model, "/v1beta/models/m:generateContent",
                                     gemini_body([user]))
        assert (status, kind) == (200, "application/json")
        [candidate] = json.loads(payload)["candidates"]
        assert candidate["finishReason"] == "STOP"
        assert candidate["content"]["parts"] == [{"functionCall": {
            "id": "call_mock_0_0", "name": "run_shell_command", "args": {"command": "true"}}}]
        failed = {"role": "user", "parts": [{"functionResponse": {
            "id": "run_shell_command__call_mock_0_0", "name": "run_shell_command",
            "response": {"error": "denied"}}}]}
        post(model, "/v1beta/models/m:generateContent",
             gemini_body([user, {"role": "model", "parts": candidate["content"]["parts"]},
                          failed]))
        assert model.tool_results()[0].is_error and model.tool_results()[0].text == "denied"

        # A side request (no tools) asking for JSON gets the smallest instance of its schema.
        router = gemini_body([user], tools=False)
        router["generationConfig"] = {"responseMimeType": "application/json",
                                      "responseJsonSchema": {
            "type": "OBJECT", "required": ["reason", "score"], "properties": {
                "reason": {"type": "STRING"}, "score": {"type": "INTEGER"},
                "extra": {"type": "STRING"}}}}
        answer = json.loads(post(model, "/v1beta/models/lite:generateContent", router)[2])
        text = answer["candidates"][0]["content"]["parts"][0]["text"]
        assert json.loads(text) == {"reason": SIDE_ANSWER, "score": 1}
        assert [r.side for r in model.requests] == [False, False, True]
        status, _, payload = post(model, "/v1beta/models/m:countTokens", {"contents": []})
        assert status == 200 and json.loads(payload)["totalTokens"] >= 1
        assert post(model, "/v1beta/models/m:embedContent", {})[0] == 404
        assert len(model.main()) == 2


def test_new_conversations_take_the_next_script_and_the_last_one_repeats() -> None:
    with MockModel([Text("first")], [Text("second")]) as model:
        model.push(Text("third"))
        answers = []
        for _ in range(4):
            body = {"model": "m", "stream": False,
                    "messages": [{"role": "user", "content": "hi"}]}
            answers.append(json.loads(post(model, "/v1/chat/completions", body)[2])
                           ["choices"][0]["message"]["content"])
        assert answers == ["first", "second", "third", "third"]
        assert [r.conversation for r in model.main()] == [0, 1, 2, 3]


def test_a_continuation_past_the_end_is_flagged_exhausted() -> None:
    with MockModel([ToolCall("bash", {"command": "true"})]) as model:
        messages = [{"role": "user", "content": "go"}]
        post(model, "/v1/chat/completions", {"model": "m", "messages": messages})
        messages += [{"role": "tool", "tool_call_id": "call_mock_0_0", "content": "x"}]
        answer = json.loads(post(model, "/v1/chat/completions",
                                 {"model": "m", "messages": messages})[2])
        assert answer["choices"][0]["message"]["content"] == EXHAUSTED
        assert [r.exhausted for r in model.main()] == [False, True]


def test_side_requests_are_answered_flagged_and_take_no_step() -> None:
    with MockModel([Text("main")]) as model:
        codex = {"model": "m", "stream": True, "input": []}
        stream = events(post(model, "/v1/responses", codex,
                             {"x-openai-subagent": "memory_consolidation"})[2])
        assert stream[-1][1]["response"]["output"][0]["content"][0]["text"] == SIDE_ANSWER
        title = anthropic_body([{"role": "user", "content": "title?"}], tools=False)
        post(model, "/v1/messages", title)
        post(model, "/v1/messages", anthropic_body([{"role": "user", "content": "hi"}]))
        assert [(r.side, r.subagent) for r in model.requests] == [
            (True, "memory_consolidation"), (True, None), (False, None)]
        assert model.main()[0].reply == Text("main")
        assert model.wait_for(lambda r: r.subagent == "memory_consolidation", 0) is not None
        assert model.wait_for(lambda r: r.path == "/nothing", 0.1) is None


def test_a_delayed_step_is_recorded_before_it_is_answered() -> None:
    with MockModel([Text("late", delay=0.5)]) as model:
        answered: list[float] = []

        def ask() -> None:
            post(model, "/v1/chat/completions", {"model": "m", "messages": []})
            answered.append(time.monotonic())

        thread = threading.Thread(target=ask)
        thread.start()
        seen = model.wait_for(lambda r: r.api == "chat", 5)
        assert seen is not None and not answered
        thread.join(10)
        assert answered and answered[0] - seen.at >= 0.5


def test_other_endpoints_answer_at_once() -> None:
    with MockModel() as model:
        status, _, payload = post(model, "/v1/messages/count_tokens", {"messages": []})
        assert status == 200 and json.loads(payload)["input_tokens"] >= 1
        assert post(model, "/v1/unknown", {})[0] == 404
        connection = http.client.HTTPConnection("127.0.0.1", model.port, timeout=10)
        connection.request("HEAD", "/api/hello")
        assert connection.getresponse().status == 200
        connection.close()
        assert [r.path for r in model.requests] == [
            "/v1/messages/count_tokens", "/v1/unknown", "/api/hello"]
        assert model.main() == []


# -- one real run of each agent ------------------------------------------------------------------


def test_pi_runs_a_bash_tool_call_and_returns_the_final_text(tmp_path: Path) -> None:
    pi = npm_bin("pi")
    work = tmp_path / "work"
    with MockModel([ToolCall("bash", {"command": "echo hi > marker"}),
                    Text("marker written")]) as model:
        done = run_agent([pi, "-p", "--no-session", "--model", "mock/mock-model",
                          "--append-system-prompt", "APPENDED-TEXT", "write the marker"],
                         pi_env(tmp_path, model), work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "marker written"
    assert (work / "marker").read_text() == "hi\n"
    first, second = model.main()
    assert "APPENDED-TEXT" in first.instructions
    assert [t["function"]["name"] for t in first.tools] == ["read", "bash", "edit", "write"]
    assert second.step == 1 and model.tool_results("bash")[0].text == "(no output)"


def upsert_call(path: str) -> ToolCall:
    return mcp("memory_upsert", {"path": path, "content": "# Note\nsaved by the agent\n",
                                 "expected_revision": "absent"})


def assert_landed(hub: HubProcess, path: str, result_text: str) -> None:
    status, got = hub.call("/v1/memory/get", {"path": path})
    assert status == 200 and got["content"] == "# Note\nsaved by the agent\n"
    assert got["revision"] in result_text


def test_claude_calls_memory_upsert_on_the_real_mcp_server(
    tmp_path: Path, memory_hub: HubProcess
) -> None:
    claude = npm_bin("claude")
    with MockModel([upsert_call("notes/claude.md"), Text("saved")]) as model:
        env = claude_env(tmp_path, model, CLAUDE_CODE_DISABLE_AUTO_MEMORY="1",
                         **amux_env(memory_hub.socket_path, memory_hub.owner_token))
        done = run_agent([claude, "-p", "save a note", "--append-system-prompt", "APPENDED-TEXT",
                          f"--mcp-config={claude_mcp_config(amux_mcp_argv())}",
                          "--strict-mcp-config", "--allowedTools=mcp__amux",
                          "--no-session-persistence", "--output-format", "json"],
                         env, tmp_path / "work")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert (output["result"], output["permission_denials"]) == ("saved", [])
    first, second = model.main()
    assert first.instructions.endswith("APPENDED-TEXT")
    assert "# Memory" not in first.instructions
    assert "mcp__amux__memory_upsert" in [tool.get("name") for tool in first.tools]
    [result] = model.tool_results("memory_upsert")
    assert not result.is_error and result.request == second.index
    assert_landed(memory_hub, "notes/claude.md", result.text)


def test_codex_calls_memory_upsert_on_the_real_mcp_server(
    tmp_path: Path, memory_hub: HubProcess
) -> None:
    codex = npm_bin("codex")
    with MockModel([upsert_call("notes/codex.md"), Text("saved")]) as model:
        overrides = codex_mcp_overrides(
            amux_mcp_argv(), amux_env(memory_hub.socket_path, memory_hub.owner_token))
        done = run_agent([codex, *overrides, "-c", 'developer_instructions="DEV-TEXT"',
                          *MEMORY_OFF_OVERRIDES, "exec", "--skip-git-repo-check", "--ephemeral",
                          "--strict-config", "save a note"],
                         codex_env(tmp_path, model), tmp_path / "work")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "saved"
    first, second = model.main()
    assert first.instruction_parts[1] == "DEV-TEXT"
    assert {"type": "namespace", "name": "mcp__amux"}.items() <= next(
        tool for tool in first.tools if tool.get("name") == "mcp__amux").items()
    [result] = model.tool_results("memory_upsert")
    assert result.request == second.index and "requires approval" not in result.text
    assert_landed(memory_hub, "notes/codex.md", result.text)
    assert not model.side()
