"""The Anthropic judge (``judges.anthropic``) at the HTTP boundary (httpx2.MockTransport, no network): answers,
failures retried, invalid answers re-asked, the schema, the fallback, secrets."""

import json
import time

import httpx2
import pytest
from judge_mocks import COMPLETIONS, GOOD, PROBLEM, Script, claude

from poly_epo_trl.judges import (
    JudgeError,
    RetryPolicy,
)


def test_anthropic_correct_and_fenced_answers(api_key):
    script = Script([GOOD, f"```json\n{GOOD}\n```"])
    judge = claude(script)
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)] * 2) == [[0, 1, 0, 100]] * 2
    body = json.loads(script.requests[0].content)
    assert body["model"] == "claude-test" and body["max_tokens"] == 1024
    assert PROBLEM in body["messages"][0]["content"]
    headers = script.requests[0].headers
    assert api_key in headers.get("x-api-key", "") + headers.get("authorization", "")  # from the environment


@pytest.mark.parametrize(
    ("failure", "stat"),
    [
        (429, "rate_limited"),
        (500, "server_errors"),
        (529, "server_errors"),  # overloaded
        ("hang", "timeouts"),
    ],
)
def test_anthropic_service_failures_are_retried(api_key, failure, stat):
    script = Script([failure])
    # a request never meets the timeout, however loaded the machine (the client's first one sets itself up inside
    # it); the scripted hang (30 s) meets it in 3 s
    timeout = 3.0 if failure == "hang" else 60.0
    judge = claude(script, retry=RetryPolicy(timeout=timeout, budget=5, base_delay=0.001))
    start = time.perf_counter()
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    stats = judge.pop_stats()
    assert script.calls == 2
    assert stats[stat] == 1 and stats["retries"] == 1 and stats["calls"] == 2
    if failure == 429:  # the server's retry-after (0.05 s) is honoured
        assert time.perf_counter() - start >= 0.05


@pytest.mark.parametrize(
    "invalid",
    ['{"1": {"cluster_id": 1}}', '{"1": {"cluster_id": "a"}, "2": 1, "3": 1, "4": 1}', "They look alike to me."],
)
def test_invalid_answer_is_re_asked_once_with_the_error_quoted(api_key, invalid):
    script = Script([invalid])
    judge = claude(script)
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    stats = judge.pop_stats()
    assert stats["invalid_answers"] == 1 and stats["corrective_turns"] == 1 and stats["calls"] == 2
    assert stats["retries"] == 0 and judge.judge.breaker.failures == 0
    corrective = json.loads(script.requests[1].content)["messages"]
    assert [m["role"] for m in corrective] == ["user", "assistant", "user"]
    assert corrective[1]["content"] == invalid and "could not be used" in corrective[2]["content"]
    assert '"1" to "4"' in corrective[2]["content"]
    # twice invalid: this group falls back alone, the breaker stays closed
    script = Script([invalid, invalid])
    judge = claude(script)
    [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
    assert result.fallback == "distinct" and judge.judge.breaker.state == "closed" and script.calls == 2
    assert judge.pop_stats()["invalid_answers"] == 2


def test_anthropic_asks_for_the_answer_schema(api_key):
    script = Script([])
    claude(script).cluster_groups([(PROBLEM, COMPLETIONS)])
    body = json.loads(script.requests[0].content)
    schema = body["output_config"]["format"]["schema"]
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert schema["required"] == ["1", "2", "3", "4"] and schema["additionalProperties"] is False
    assert schema["properties"]["3"]["properties"]["cluster_id"] == {"type": "integer"}
    assert "temperature" not in body  # the installed SDK takes none; the cache gives reproducibility


def test_anthropic_gives_up_to_the_fallback(api_key):
    script = Script([500] * 1000)
    judge = claude(script, fallback="distinct")
    [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
    assert result.labels == [0, 1, 2, 3] and result.fallback == "distinct"
    assert judge.pop_stats()["fallback/distinct"] == 1
    for fallback in ("grpo", "skip"):
        judge = claude(Script([500] * 1000), fallback=fallback)
        [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
        assert result.labels is None and result.fallback == fallback
    with pytest.raises(JudgeError, match="could not judge"):
        claude(Script([500] * 1000), fallback="raise").cluster_groups([(PROBLEM, COMPLETIONS)])


def test_secrets_never_leak(api_key, monkeypatch, tmp_path):
    leaky = httpx2.Response(401, json={"error": {"type": "authentication_error", "message": f"bad key {api_key}"}})
    script = Script([])
    script.reply = lambda text: leaky
    judge = claude(script, fallback="raise")
    with pytest.raises(JudgeError) as error:
        judge.cluster_groups([(PROBLEM, COMPLETIONS)])
    assert api_key not in str(error.value) and api_key not in repr(error.value.__cause__)
    assert script.calls == 1  # a 401 is not retried
    assert api_key not in repr(judge) and api_key not in str(vars(judge))
    from poly_epo_trl import PolyEPOConfig

    config = PolyEPOConfig(output_dir=str(tmp_path), judge="anthropic:claude-test", report_to="none", use_cpu=True)
    assert api_key not in json.dumps(config.to_dict(), default=str)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    judge = claude(Script([GOOD]), fallback="raise")
    with pytest.raises(JudgeError, match="ANTHROPIC_API_KEY is not set"):
        judge.cluster_groups([(PROBLEM, COMPLETIONS)])
