"""Judges at the HTTP boundary (httpx2.MockTransport, no network): answers, failures, resilience, cache, secrets."""

import asyncio
import json
import multiprocessing
import random
import time
from collections import Counter

import httpx2
import pytest

from poly_epo_trl.judges import (
    AnswerJudge,
    AnthropicJudge,
    CircuitBreaker,
    InvalidAnswer,
    JudgeCache,
    JudgeError,
    JudgeTemplate,
    OpenAICompatibleJudge,
    RetryPolicy,
    parse_cluster_ids,
    resolve_judge,
)

FAST = RetryPolicy(timeout=0.5, max_retries=2, base_delay=0.001, max_delay=0.01)
PROBLEM = "Solve x^2 - 5x + 6 = 0."
COMPLETIONS = ["factor: (x-2)(x-3), so x=2 or 3", "quadratic formula gives 2 and 3", "(x-2)(x-3)=0", "asdf"]
GOOD = json.dumps(
    {
        "1": {"strategy": "factoring", "cluster_id": 1},
        "2": {"strategy": "quadratic formula", "cluster_id": 2},
        "3": {"strategy": "factoring", "cluster_id": 1},
        "4": {"strategy": "gibberish", "cluster_id": 100},
    }
)


def anthropic_reply(text: str) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        },
    )


def openai_reply(text: str) -> httpx2.Response:
    return httpx2.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}]})


class Script:
    """A fake service: each call takes the next scripted action (a reply text, an int status, or 'hang')."""

    def __init__(self, actions, reply=anthropic_reply, latency: float = 0.0):
        self.actions = list(actions)
        self.reply = reply
        self.latency = latency
        self.calls = 0
        self.requests = []

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        self.requests.append(request)
        action = self.actions.pop(0) if self.actions else GOOD
        if self.latency:
            await asyncio.sleep(self.latency)
        if action == "hang":
            await asyncio.sleep(30)
        if action == 429:
            return httpx2.Response(429, headers={"retry-after": "0.05"}, json={"error": {"type": "rate_limit_error"}})
        if isinstance(action, int):
            return httpx2.Response(action, json={"error": {"type": "api_error", "message": "boom"}})
        return self.reply(action)


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-key-0123456789")
    return "sk-ant-secret-key-0123456789"


def claude(script: Script, **kwargs) -> AnthropicJudge:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(script))
    kwargs.setdefault("retry", FAST)
    return AnthropicJudge(model="claude-test", http_client=client, **kwargs)


# Reading the answer


def test_parse_answers():
    assert parse_cluster_ids(GOOD, 4) == [1, 2, 1, 100]
    assert parse_cluster_ids(f"Sure! Here you go:\n```json\n{GOOD}\n```\nHope it helps.", 4) == [1, 2, 1, 100]
    assert parse_cluster_ids('{"1": 3, "2": 3}', 2) == [3, 3]
    for bad, message in [
        ('{"1": {"cluster_id": 1}}', "keys"),
        ('{"1": {"cluster_id": "1"}, "2": {"cluster_id": 2}}', "not an integer"),
        ('{"1": {"cluster_id": 1.5}, "2": {"cluster_id": 2}}', "not an integer"),
        ('{"1": {"cluster_id": true}, "2": {"cluster_id": 2}}', "not an integer"),
        ("[1, 2]", "no JSON object"),
        ("I think they are all the same.", "no JSON"),
    ]:
        with pytest.raises(InvalidAnswer, match=message):
            parse_cluster_ids(bad, 2)


def test_templates(tmp_path):
    math = JudgeTemplate.load("math")
    text = math.render(PROBLEM, COMPLETIONS)
    assert PROBLEM in text and "### Answer 4\nasdf" in text and '"1" to "4"' in text and "cluster_id 100" in text
    assert "$" not in text.replace("$problem", "")  # every placeholder filled
    assert JudgeTemplate.load("code").digest != math.digest
    own = tmp_path / "judge.txt"
    own.write_text("Group these.\n$problem\n$responses\nJSON only.")
    assert JudgeTemplate.load(str(own)).render("p", ["a"]) == "Group these.\np\n### Answer 1\na\nJSON only."
    own.write_text("no placeholders")
    with pytest.raises(ValueError, match="lacks the placeholders"):
        JudgeTemplate.load(str(own))
    with pytest.raises(ValueError, match="neither"):
        JudgeTemplate.load("physics")


# Claude through the anthropic SDK


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
        ('{"1": {"cluster_id": 1}}', "invalid_answers"),  # wrong count
        ('{"1": {"cluster_id": "a"}, "2": 1, "3": 1, "4": 1}', "invalid_answers"),  # non-integer id
        (429, "rate_limited"),
        (500, "server_errors"),
        (529, "server_errors"),  # overloaded
        ("hang", "timeouts"),
    ],
)
def test_anthropic_failures_are_retried(api_key, failure, stat):
    script = Script([failure])
    judge = claude(script, retry=RetryPolicy(timeout=0.3, max_retries=2, base_delay=0.001))
    start = time.perf_counter()
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    stats = judge.pop_stats()
    assert script.calls == 2
    assert stats[stat] == 1 and stats["retries"] == 1 and stats["calls"] == 2
    if failure == 429:  # the server's retry-after (0.05 s) is honoured
        assert time.perf_counter() - start >= 0.05


def test_anthropic_gives_up_to_the_fallback(api_key):
    script = Script([500] * 3)
    judge = claude(script, fallback="distinct")
    [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
    assert result.labels == [0, 1, 2, 3] and result.fallback == "distinct"
    assert judge.pop_stats()["fallback/distinct"] == 1
    for fallback in ("grpo", "skip"):
        judge = claude(Script([500] * 3), fallback=fallback)
        [result] = judge.judge_groups([(PROBLEM, COMPLETIONS)])
        assert result.labels is None and result.fallback == fallback
    with pytest.raises(JudgeError, match="could not judge"):
        claude(Script([500] * 3), fallback="raise").cluster_groups([(PROBLEM, COMPLETIONS)])


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


# An OpenAI-compatible server (vllm serve)


def test_openai_compatible_server(monkeypatch):
    script = Script([GOOD, 503, '{"1": 2, "2": 2, "3": 2, "4": 100}'], reply=openai_reply)
    monkeypatch.setenv("JUDGE_KEY", "local-secret")
    judge = resolve_judge("openai:http://judge-host:8001/v1/Qwen/Qwen3-4B-Instruct-2507", retry=FAST, fallback="raise")
    assert isinstance(judge, OpenAICompatibleJudge)
    assert (judge.base_url, judge.model) == ("http://judge-host:8001/v1", "Qwen/Qwen3-4B-Instruct-2507")
    judge = OpenAICompatibleJudge(
        "http://judge-host:8001/v1",
        "Qwen/Qwen3-4B-Instruct-2507",
        api_key_env="JUDGE_KEY",
        retry=FAST,
        transport=httpx2.MockTransport(script),
    )
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)] * 2) == [[0, 1, 0, 100], [0, 0, 0, 100]]
    request = script.requests[0]
    assert str(request.url) == "http://judge-host:8001/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer local-secret"
    assert json.loads(request.content)["response_format"] == {"type": "json_object"}
    assert judge.pop_stats()["server_errors"] == 1


# Resilience at scale


def test_fault_injection_200_groups():
    """30% of calls fail in mixed ways; every group gets ids or its fallback and the counts match the injection."""
    rng = random.Random(0)
    kinds = {"hang": "timeouts", 429: "rate_limited", 500: "server_errors", '{"1": 1}': "invalid_answers"}
    actions = [rng.choice(list(kinds)) if rng.random() < 0.3 else GOOD for _ in range(2000)]
    script = Script(actions, reply=openai_reply)
    judge = OpenAICompatibleJudge(
        "http://x/v1",
        "m",
        transport=httpx2.MockTransport(script),
        max_concurrency=32,
        retry=RetryPolicy(timeout=0.2, max_retries=2, base_delay=0.001, max_delay=0.005, max_retry_after=0.01),
        breaker=CircuitBreaker(failure_threshold=10_000),
        fallback="distinct",
    )
    results = judge.judge_groups([(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(200)])
    stats = judge.pop_stats()
    served = actions[: script.calls]
    injected = Counter(kinds[a] for a in served if a != GOOD)
    assert sum(injected.values()) > 0.2 * script.calls
    for stat in kinds.values():
        assert stats.get(stat, 0) == injected[stat], stat
    assert stats["calls"] == script.calls
    judged = [r for r in results if r.fallback is None]
    fell_back = [r for r in results if r.fallback == "distinct"]
    assert len(judged) + len(fell_back) == 200
    assert all(r.labels == [0, 1, 0, 100] for r in judged)
    assert all(r.labels == [0, 1, 2, 3] for r in fell_back)
    assert stats.get("fallback/distinct", 0) == len(fell_back)
    assert stats["calls"] == len(judged) + stats["retries"] + len(fell_back)  # each gave up group: 1 + 2 retries


def test_circuit_breaker_stops_hammering_a_dead_api_and_recovers():
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=3, reset_seconds=60, clock=lambda: now[0])
    script = Script([500] * 1000, reply=openai_reply)
    judge = OpenAICompatibleJudge(
        "http://x/v1", "m", transport=httpx2.MockTransport(script), retry=FAST, breaker=breaker, max_concurrency=1
    )
    start = time.perf_counter()
    results = judge.judge_groups([(PROBLEM, COMPLETIONS)] * 50)
    assert time.perf_counter() - start < 2
    assert all(r.fallback == "distinct" for r in results)
    assert script.calls == 3 and breaker.state == "open"
    assert judge.pop_stats()["circuit_open"] == 49
    script.actions = []  # the service comes back
    now[0] = 61.0
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    assert breaker.state == "closed"


def test_chain_falls_back_to_the_next_judge():
    script = Script([500] * 100, reply=openai_reply)
    first = OpenAICompatibleJudge("http://x/v1", "m", transport=httpx2.MockTransport(script), retry=FAST)
    first.chain = [AnswerJudge(mode="last_number")]
    [result] = first.judge_groups([(PROBLEM, ["x = 3", "so 3", "it is 2", "nothing"])])
    assert result.labels == [0, 0, 1, 100] and result.judge == "answer" and result.fallback is None
    assert first.pop_stats()["answered_by/answer"] == 1
    chained = resolve_judge("openai:http://x/v1/m,answer:last_number", retry=FAST)
    assert isinstance(chained.chain[0], AnswerJudge)


def test_concurrency_128_groups_at_32_take_about_4_latencies():
    latency = 0.2
    script = Script([], reply=openai_reply, latency=latency)
    judge = OpenAICompatibleJudge(
        "http://x/v1", "m", transport=httpx2.MockTransport(script), max_concurrency=32, retry=FAST
    )
    start = time.perf_counter()
    labels = judge.cluster_groups([(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(128)])
    elapsed = time.perf_counter() - start
    assert len(labels) == 128 and script.calls == 128
    assert 4 * latency <= elapsed < 4 * latency * 1.5 + 0.3, elapsed


# Cache


def test_cache_second_identical_batch_makes_no_calls(tmp_path):
    script = Script([], reply=openai_reply)
    groups = [(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(10)]

    def judge():
        transport = httpx2.MockTransport(script)
        return OpenAICompatibleJudge("http://x/v1", "m", transport=transport, retry=FAST, cache_dir=tmp_path)

    first = judge().cluster_groups(groups)
    assert script.calls == 10
    again = judge()  # a new run (resume, evaluation) with the same cache
    assert again.cluster_groups(groups) == first and script.calls == 10
    assert again.pop_stats()["cache_hits"] == 10
    other_template = OpenAICompatibleJudge(
        "http://x/v1", "m", transport=httpx2.MockTransport(script), retry=FAST, cache_dir=tmp_path, template="code"
    )
    other_template.cluster_groups(groups[:1])
    assert script.calls == 11  # another template is another question


def _fill_cache(path: str, worker: int) -> None:
    cache = JudgeCache(path)
    for i in range(200):
        cache.put(f"{worker}-{i}", [worker, i])


def test_cache_is_safe_with_several_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill_cache, args=(str(tmp_path), w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert all(p.exitcode == 0 for p in workers)
    cache = JudgeCache(tmp_path)
    assert len(cache) == 600 and cache.get("2-199") == [2, 199]
