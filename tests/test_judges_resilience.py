"""Per-request resilience (``judges.resilience``): retries under injected faults, the circuit breaker, adaptive
concurrency."""

import random
import time
from collections import Counter

from judge_mocks import COMPLETIONS, GOOD, PROBLEM, Script, openai, openai_reply

from poly_epo_trl.judges import (
    AdaptiveConcurrency,
    CircuitBreaker,
    RetryPolicy,
    step_metrics,
)


def test_fault_injection_200_groups():
    """30% of calls fail in mixed ways; every group gets ids or its fallback and the counts match the injection."""
    rng = random.Random(0)
    kinds = {"hang": "timeouts", 429: "rate_limited", 500: "server_errors", '{"1": 1}': "invalid_answers"}
    actions = [rng.choice(list(kinds)) if rng.random() < 0.3 else GOOD for _ in range(2000)]
    script = Script(actions, reply=openai_reply)
    judge = openai(
        script,
        max_concurrency=32,
        retry=RetryPolicy(timeout=0.2, budget=0.3, base_delay=0.001, max_delay=0.005, max_retry_after=0.01),
        breaker=CircuitBreaker(failure_threshold=10_000),
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
    # every request is a group's first ask, a retry of a service failure, or a corrective turn
    assert stats["calls"] == 200 + stats["retries"] + stats["corrective_turns"]
    assert step_metrics(stats, [])["fallback_frac"] == len(fell_back) / 200


def test_breaker_opens_on_service_failures_only_and_probes():
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=3, first_probe=1.0, probe_interval=5.0, clock=lambda: now[0])
    tickets = [breaker.try_admit() for _ in range(8)]  # 8 requests in flight
    for ticket in tickets[:3]:
        breaker.record(ticket, answered=False)
    assert breaker.state == "open" and breaker.next_probe_at == 1.0 and breaker.try_admit() is None
    now[0] = 0.9
    for ticket in tickets[3:]:  # sent before it opened: their failures do not restart its clock
        breaker.record(ticket, answered=False)
    assert breaker.next_probe_at == 1.0
    now[0] = 1.0
    probe = breaker.try_admit()
    assert probe.probe and breaker.try_admit() is None  # one probe at a time
    breaker.record(probe, answered=False)
    assert breaker.next_probe_at == 3.0  # then 2 s, 4 s, at most probe_interval
    now[0] = 3.0
    probe = breaker.try_admit()
    breaker.record(probe, answered=False)
    assert breaker.next_probe_at == 3.0 + 4.0
    now[0] = 7.0
    breaker.record(breaker.try_admit(), answered=True)  # an answer of any kind closes it
    assert breaker.state == "closed" and breaker.try_admit() is not None
    healthy = CircuitBreaker(failure_threshold=3)
    for _ in range(100):  # invalid answers and 4xx are answers
        healthy.record(healthy.try_admit(), answered=True)
    assert healthy.state == "closed" and healthy.times_opened == 0


def test_circuit_breaker_stops_hammering_a_dead_api_and_recovers():
    breaker = CircuitBreaker(failure_threshold=3, first_probe=0.2, probe_interval=0.4)
    script = Script([500] * 10_000, reply=openai_reply)
    policy = RetryPolicy(timeout=0.5, budget=1.0, base_delay=0.001, max_delay=0.01)
    judge = openai(script, retry=policy, breaker=breaker)
    start = time.perf_counter()
    results = judge.judge_groups([(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(50)])
    elapsed = time.perf_counter() - start
    assert elapsed < 2.5, elapsed  # the groups wait out the outage together, not one after another
    assert all(r.fallback == "distinct" for r in results)
    stats = judge.pop_stats()
    assert script.calls < 20 and stats["probes"] >= 2 and breaker.state == "open", (script.calls, stats)
    assert stats["circuit_open"] + stats["server_errors"] >= 50
    script.actions = []  # the service comes back
    time.sleep(0.4)
    assert judge.cluster_groups([(PROBLEM, COMPLETIONS)]) == [[0, 1, 0, 100]]
    assert breaker.state == "closed"


def test_groups_backing_off_go_again_as_soon_as_a_probe_finds_the_service_back():
    """Long back-offs (up to 5 s) and a quick breaker: the groups that failed before it opened stop sleeping when it
    opens, and every group goes again right after the first probe that gets an answer."""
    breaker = CircuitBreaker(failure_threshold=3, first_probe=0.2, probe_interval=0.4)
    script = Script([500] * 8, reply=openai_reply)  # the first 8 requests fail, then the service is back
    policy = RetryPolicy(timeout=1.0, budget=30.0, base_delay=5.0, max_delay=5.0)
    judge = openai(script, retry=policy, breaker=breaker)
    start = time.perf_counter()
    results = judge.judge_groups([(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(8)])
    elapsed = time.perf_counter() - start
    assert all(r.fallback is None and r.labels == [0, 1, 0, 100] for r in results)
    assert breaker.times_opened == 1 and breaker.state == "closed"
    assert elapsed < 1.5, elapsed  # the first probe goes 0.2 s after opening; back-offs alone: up to 5 s


def test_concurrency_128_groups_at_32_take_about_4_latencies():
    latency = 0.2
    script = Script([], reply=openai_reply, latency=latency)
    judge = openai(script, max_concurrency=32, initial_concurrency=32)
    start = time.perf_counter()
    labels = judge.cluster_groups([(f"{PROBLEM} #{g}", COMPLETIONS) for g in range(128)])
    elapsed = time.perf_counter() - start
    assert len(labels) == 128 and script.calls == 128 and script.max_in_flight == 32
    assert 4 * latency <= elapsed < 8 * latency, elapsed  # about 4 latencies; 16 in flight would take 8


def test_concurrency_adapts_to_a_server_that_keeps_up_and_halves_on_overload():
    limiter = AdaptiveConcurrency(maximum=32, initial=8)
    for _ in range(600):  # +1/limit per answer: about +1 per round trip
        limiter.in_flight += 1
        limiter.release(sent_at=0.0, overload=False)
    assert limiter.limit == 32
    now = limiter.clock()
    for _ in range(3):  # three timeouts of one round trip: one decrease
        limiter.in_flight += 1
        limiter.release(sent_at=now, overload=True)
    assert limiter.limit == 16
    limiter.in_flight += 1
    limiter.release(sent_at=limiter.clock() + 1, overload=True)  # sent after the decrease: another
    assert limiter.limit == 8
    for _ in range(10):
        limiter.in_flight += 1
        limiter.release(sent_at=limiter.clock() + 1, overload=True)
    assert limiter.limit == 1 and limiter.in_flight == 0
