"""The OpenAI-compatible judge (``judges.openai_server``) at the HTTP boundary (httpx2.MockTransport): specs, base
URLs, structured output and its forms. (Against real server processes: test_judges_server_process.py,
test_judges_llama_server.py.)"""

import json

import httpx2
import pytest
from judge_mocks import COMPLETIONS, FAST, GOOD, PROBLEM, Script, openai, openai_reply, spec

from poly_epo_trl.judges import (
    ServerOptions,
    redact_url,
)


def test_openai_compatible_server(monkeypatch):
    script = Script([GOOD, 503, '{"1": 2, "2": 2, "3": 2, "4": 100}'], reply=openai_reply)
    monkeypatch.setenv("JUDGE_KEY", "local-secret")
    server = ServerOptions(
        "http://judge-host:8001/v1",
        "Qwen/Qwen3-4B-Instruct-2507",
        api_key_env="JUDGE_KEY",
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    judge = openai(script, server=server, retry=FAST, max_tokens=300, temperature=0.2)
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)] * 2) == [[0, 1, 0, 100], [0, 0, 0, 100]]
    request = script.requests[0]
    assert str(request.url) == "http://judge-host:8001/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer local-secret"
    body = json.loads(request.content)
    assert body["max_tokens"] == 300 and body["temperature"] == 0.2 and body["stream"] is True
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["1", "2", "3", "4"]
    assert judge.pop_stats()["server_errors"] == 1


@pytest.mark.parametrize(
    ("text", "base_url", "model"),
    [
        (
            "openai:http://judge-host:8001/v1/Qwen/Qwen3-4B-Instruct-2507",
            "http://judge-host:8001/v1",
            "Qwen/Qwen3-4B-Instruct-2507",
        ),
        ("openai:http://host/api/v1/meta-llama/Llama-3.1-8B", "http://host/api/v1", "meta-llama/Llama-3.1-8B"),
        (
            "openai:https://g.example/v1beta/openai/gemini-2.5-flash",
            "https://g.example/v1beta/openai",
            "gemini-2.5-flash",
        ),
        ("openai:http://127.0.0.1:8000/v1/m", "http://127.0.0.1:8000/v1", "m"),
    ],
)
def test_openai_specs_split_after_the_last_version_segment(text, base_url, model):
    judge = spec(text, retry=FAST).judge
    assert (judge.base_url, judge.model) == (base_url, model)


def test_openai_base_url_and_model_given_apart():
    judge = spec("openai", server=ServerOptions("http://host/odd/prefix", "org/v2")).judge
    assert (judge.base_url, judge.model) == ("http://host/odd/prefix", "org/v2")
    judge = spec("openai:http://host/odd/prefix", server=ServerOptions(model="org/v2")).judge
    assert (judge.base_url, judge.model) == ("http://host/odd/prefix", "org/v2")
    with pytest.raises(ValueError, match="set judge_base_url and judge_model separately"):
        spec("openai:http://host/odd/prefix/org/model")
    with pytest.raises(ValueError, match="needs the server"):
        spec("openai")
    with pytest.raises(ValueError, match="keep one"):
        spec("openai:http://a/v1/m", server=ServerOptions("http://b/v1"))
    with pytest.raises(ValueError, match="not an http"):
        spec("openai:judge-host:8000/v1/m")
    assert redact_url("http://user:pw@host:1/v1?key=abc") == "http://***@host:1/v1?key=***"


def test_structured_output_is_dropped_when_the_server_rejects_it(caplog):
    async def server(request: httpx2.Request) -> httpx2.Response:
        if "response_format" in json.loads(request.content):
            return httpx2.Response(400, json={"error": {"message": "unknown field response_format"}})
        return openai_reply(GOOD)

    judge = openai(server, retry=FAST)
    with caplog.at_level("WARNING"):
        assert judge.cluster_groups([(PROBLEM, COMPLETIONS)] * 3) == [[0, 1, 0, 100]] * 3
    assert judge.judge.structured_output == "none" and "rejected structured output" in caplog.text
    assert judge.pop_stats()["structured_output_off"] == 1


@pytest.mark.parametrize(
    ("structured", "field", "value"),
    [
        ("guided_json", "guided_json", "schema"),
        ("structured_outputs", "structured_outputs", "schema"),
        ("json_object", "response_format", {"type": "json_object"}),
    ],
)
def test_other_structured_output_forms(structured, field, value):
    script = Script([], reply=openai_reply)
    judge = openai(script, server=ServerOptions("http://x/v1", "m", stream=False), structured_output=structured)
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    body = json.loads(script.requests[0].content)
    assert "stream" not in body and "stream_options" not in body
    schema = body[field]["json"] if structured == "structured_outputs" else body[field]
    if value == "schema":
        assert schema["required"] == ["1", "2", "3", "4"]
    else:
        assert schema == value
