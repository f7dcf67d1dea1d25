"""The judge against a real server process (tests/helpers/judge_server.py on loopback): one slot, slow, invalid
answers, 4xx, a path prefix, killed mid-run and restarted on the same port, and a soak with injected transport
failures."""

import logging
import threading
import time
from pathlib import Path

import pytest
from judge_server import ServerProcess
from ports import free_port
from tiny import save_tiny_model, small_config, toy_dataset
from transformers import TrainerCallback

from poly_epo_trl import PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.judges import (
    CircuitBreaker,
    JudgeError,
    JudgeFailing,
    JudgePipeline,
    JudgeSpec,
    LMOptions,
    OpenAICompatibleJudge,
    RetryPolicy,
    ServerOptions,
    step_metrics,
)
from poly_epo_trl.judges.audit import read_audit
from poly_epo_trl.judges.outage import OUTAGE_RETRY_PAUSE

MODEL = "org/judge-1.5b"


def groups(count: int, tag: str = "", size: int = 4) -> list[tuple[str, list[str]]]:
    """Groups whose expected clustering is known: answers share a cluster when they share their boxed value."""
    return [
        (
            f"Problem {tag}{g}: what is {g} + 1?",
            [f"Step {i}: reasoning. \\boxed{{{(g + i) % 2}}}" for i in range(size)],
        )
        for g in range(count)
    ]


def expected(group: tuple[str, list[str]]) -> list[int]:
    first = {}
    return [first.setdefault(text.rsplit("{", 1)[1], len(first)) for text in group[1]]


def judge_for(
    server: ServerProcess | str,
    fallback: str = "distinct",
    breaker: CircuitBreaker | None = None,
    max_concurrency: int = 32,
    max_outage_seconds: float = 0.0,
    api_key_env: str = "OPENAI_API_KEY",
    stream: bool = True,
    **options,
) -> JudgePipeline:
    """The judge at ``server`` (a test server, or a base URL), asked as ``options`` say (``LMOptions``), in a
    pipeline with ``fallback`` and ``max_outage_seconds``."""
    base_url = server if isinstance(server, str) else server.base_url
    judge = OpenAICompatibleJudge(
        ServerOptions(base_url, MODEL, api_key_env=api_key_env, stream=stream),
        LMOptions(**options),
        breaker=breaker,
        max_concurrency=max_concurrency,
    )
    return JudgePipeline(judge, fallback=fallback, max_outage_seconds=max_outage_seconds)


def test_one_slot_server_judges_every_group():
    """32 groups at a server that runs one request at a time: all judged, none waits past its timeout."""
    with ServerProcess(slots=1, latency=0.05, model=MODEL) as server:
        judge = judge_for(server)
        batch = groups(32)
        results = judge.judge_groups(batch)
        assert [r.labels for r in results] == [expected(g) for g in batch]
        stats = judge.pop_stats()
        assert stats["calls"] == 32 and "fallback/distinct" not in stats
        assert server.stats()["completed"] == 32 and server.stats()["structured"] == 32


@pytest.mark.slow
def test_concurrency_adapts_to_a_queue_the_client_cannot_see():
    """A slow one-slot server and a timeout shorter than the queue 16 deep: timeouts halve the concurrency, the
    timed-out requests are aborted on the server (not run for nobody), and every group is judged in the end."""
    with ServerProcess(slots=1, latency=0.1, model=MODEL) as server:
        policy = RetryPolicy(timeout=0.55, budget=60, base_delay=0.05, max_delay=0.5)
        judge = judge_for(server, retry=policy, initial_concurrency=16, max_concurrency=32)
        batch = groups(32)
        results = judge.judge_groups(batch)
        assert [r.labels for r in results] == [expected(g) for g in batch]
        stats = judge.pop_stats()
        assert stats["timeouts"] > 0 and judge.judge.limiter.limit < 16
        assert judge.judge.breaker.times_opened == 0  # a slow server is not a dead one
        time.sleep(0.3)
        served = server.stats()
        # most requests given up on were cancelled on the server; a few had finished as the client gave up
        assert served["aborted"] >= 0.6 * stats["timeouts"], str((served, stats))
        assert served["completed"] - 32 <= stats["timeouts"] - served["aborted"]


def test_a_given_up_request_is_cancelled_on_the_server():
    with ServerProcess(slots=1, latency=3.0, model=MODEL) as server:
        judge = judge_for(server, retry=RetryPolicy(timeout=0.3, budget=0))
        [result] = judge.judge_groups(groups(1))
        assert result.fallback == "distinct"
        time.sleep(0.3)
        served = server.stats()
        assert served["aborted"] == 1 and served.get("completed", 0) == 0 and served["waiting"] == 0


def test_invalid_answers_never_open_the_breaker():
    """20% invalid answers: each group is re-asked once and judged, or falls back alone; the breaker stays closed."""
    with ServerProcess(slots=1, latency=0.005, invalid_frac=0.2, model=MODEL, seed=1) as server:
        judge = judge_for(server, breaker=CircuitBreaker(failure_threshold=3))
        batch = groups(100)
        results = judge.judge_groups(batch)
        stats = judge.pop_stats()
        judged = [r for r in results if r.fallback is None]
        assert all(r.labels == expected(g) for r, g in zip(results, batch, strict=True) if r.fallback is None)
        assert len(judged) >= 85 and stats.get("fallback/distinct", 0) == 100 - len(judged)
        assert stats["invalid_answers"] == server.stats()["invalid_sent"] > 10
        assert stats["corrective_turns"] == stats["calls"] - 100 and stats["retries"] == 0
        assert judge.judge.breaker.times_opened == 0 and judge.judge.breaker.state == "closed"
        assert step_metrics(stats, [])["fallback_frac"] == (100 - len(judged)) / 100


def test_a_group_the_server_rejects_falls_back_alone():
    knobs = {"invalid_marker": "ALWAYS-INVALID", "reject_marker": "TOO-LONG", "model": MODEL}
    with ServerProcess(slots=2, **knobs) as server:
        judge = judge_for(server, breaker=CircuitBreaker(failure_threshold=1))
        batch = groups(6)
        batch[1] = ("ALWAYS-INVALID " + batch[1][0], batch[1][1])
        batch[4] = ("TOO-LONG " + batch[4][0], batch[4][1])
        results = judge.judge_groups(batch)
        assert [r.fallback for r in results] == [None, "distinct", None, None, "distinct", None]
        stats = judge.pop_stats()
        assert stats["invalid_answers"] == 2 and stats["rejected"] == 1 and stats.get("retries", 0) == 0
        assert judge.judge.breaker.state == "closed" and judge.judge.structured_output == "json_schema"
        assert "keys ['1']" in results[1].cause
        assert "maximum context length" in results[4].cause and server.base_url in results[4].cause


@pytest.mark.slow
def test_restart_mid_run_judged_again_within_seconds():
    """Kill the server in the middle of a run of batches, restart it on the same port 3 s later: no group falls
    back (the outage is shorter than the retry budget), and groups are judged again by the first probe after the
    restart."""
    port = free_port()
    server = ServerProcess(port=port, slots=2, latency=0.02, model=MODEL).start()
    judge = judge_for(f"http://127.0.0.1:{port}/v1")
    judged_at: list[float] = []
    results = []

    def run() -> None:
        for b in range(12):
            batch = groups(8, tag=f"b{b}-")
            for result in judge.judge_groups(batch):
                results.append(result)
                judged_at.append(time.monotonic())

    worker = threading.Thread(target=run)
    try:
        worker.start()
        while len(results) < 16:
            time.sleep(0.01)
        server.kill()
        time.sleep(3)
        server.start()
        restarted = time.monotonic()  # up again: it answers /health
        worker.join(60)
        assert not worker.is_alive()
    finally:
        server.kill()
    assert len(results) == 96 and all(r.fallback is None for r in results)
    first_after = min(t for t in judged_at if t > restarted)
    # groups that failed wait for the breaker's probes (1, 2, 4, then every 5 s), not out their own back-offs (up to
    # max_delay, 10 s): the server is found by the next probe, within one probe interval of answering again
    breaker = judge.judge.breaker
    assert first_after - restarted < breaker.probe_interval + 1, first_after - restarted
    stats = judge.pop_stats()
    assert breaker.times_opened >= 1 and stats["probes"] >= 1 and breaker.state == "closed"
    assert stats["connect_errors"] >= 1


@pytest.mark.slow
def test_an_outage_longer_than_the_retry_budget_is_waited_out_when_the_trainer_asks():
    """With max_outage_seconds (the trainer's judge_max_outage_seconds; the held-out evaluation shares the judge), a
    server down 4 s against a 0.5 s retry budget: every group waits and is judged once it is back (within one probe
    interval and one pause of its return, however long it took to start), none falls back."""
    port = free_port()
    server = ServerProcess(port=port, slots=2, latency=0.01, model=MODEL).start()
    judge = judge_for(f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(budget=0.5), max_outage_seconds=60)
    back: list[float] = []

    def restart() -> None:
        server.start()
        back.append(time.monotonic())

    try:
        assert all(r.fallback is None for r in judge.judge_groups(groups(4, tag="before-")))
        server.kill()
        threading.Timer(4.0, restart).start()
        start = time.monotonic()
        results = judge.judge_groups(groups(12, tag="during-"))
        done = time.monotonic()
    finally:
        time.sleep(0.1)
        server.kill()
    assert all(r.fallback is None and r.labels is not None for r in results)
    within = judge.judge.breaker.probe_interval + OUTAGE_RETRY_PAUSE + 3  # the next probe, a pause, the judging
    assert done - start >= 4.0 and done - back[0] < within, (start, back, done)
    stats = judge.pop_stats()
    assert stats["outages"] == 1 and stats["outage_waits"] >= 1 and judge.outage.since is None


def test_a_long_outage_falls_back_counted_and_warned(caplog):
    port = free_port()
    policy = RetryPolicy(budget=1.5, base_delay=0.05, max_delay=0.2)
    judge = judge_for(f"http://127.0.0.1:{port}/v1", retry=policy)
    with caplog.at_level(logging.WARNING):
        start = time.monotonic()
        results = judge.judge_groups(groups(20))
        elapsed = time.monotonic() - start
    assert all(r.fallback == "distinct" for r in results) and elapsed < 5, elapsed
    stats = judge.pop_stats()
    assert stats["fallback/distinct"] == 20 and step_metrics(stats, [])["fallback_frac"] == 1.0
    warnings = [r.getMessage() for r in caplog.records if "fell back" in r.getMessage()]
    assert len(warnings) == 1  # rate limited, not one per group
    assert f"the judge at http://127.0.0.1:{port}/v1" in warnings[0]
    assert "cannot connect" in warnings[0] and "start the judge server" in warnings[0]
    assert "judge_max_fallback_frac" in warnings[0]


def test_closed_port_error_names_the_url_and_the_fix():
    port = free_port()
    judge = JudgeSpec.parse(
        f"openai:http://127.0.0.1:{port}/v1/{MODEL}", lm=LMOptions(retry=RetryPolicy(budget=0.2))
    ).build()
    with pytest.raises(JudgeError) as error:
        judge.cluster_groups(groups(1))
    message = str(error.value)
    assert f"http://127.0.0.1:{port}/v1" in message and "cannot connect" in message
    assert "start the judge server" in message and "judge_base_url" in message


def test_path_prefix_model_with_slash_and_model_discovery():
    with ServerProcess(prefix="/api/v1", model=MODEL) as server:
        base = f"http://127.0.0.1:{server.port}/api/v1"
        spec = JudgeSpec.parse(f"openai:{base}/{MODEL}", fallback="distinct").build()
        assert (spec.judge.base_url, spec.judge.model) == (base, MODEL)
        assert [r.labels for r in spec.judge_groups(groups(2))] == [expected(g) for g in groups(2)]
        discovered = JudgeSpec.parse("openai", fallback="distinct", server=ServerOptions(base)).build()
        assert discovered.cluster_groups(groups(1)) == [expected(groups(1)[0])] and discovered.judge.model == MODEL
        wrong = JudgeSpec.parse("openai", fallback="distinct", server=ServerOptions(base, "org/other")).build()
        [result] = wrong.judge_groups(groups(1))
        assert result.fallback == "distinct" and "404" in wrong.last_failure and "/models" in wrong.last_failure
        assert wrong.judge.breaker.state == "closed"


def test_api_key_from_the_environment(monkeypatch):
    with ServerProcess(api_key="sk-local-123", model=MODEL) as server:
        judge = judge_for(server, api_key_env="JUDGE_KEY")
        [result] = judge.judge_groups(groups(1))
        assert result.fallback == "distinct" and "export it as $JUDGE_KEY" in judge.last_failure
        monkeypatch.setenv("JUDGE_KEY", "sk-local-123")
        assert judge.cluster_groups(groups(1)) == [expected(groups(1)[0])]
        monkeypatch.setenv("JUDGE_KEY", "sk-wrong-456")
        judge.judge_groups(groups(1))
        assert "was refused" in judge.last_failure and "sk-wrong-456" not in judge.last_failure


def test_a_server_that_does_not_stream():
    with ServerProcess(model=MODEL) as server:
        judge = judge_for(server, stream=False)
        assert judge.cluster_groups(groups(3)) == [expected(g) for g in groups(3)]
        assert judge.pop_stats()["completion_tokens"] > 0


def test_servers_without_structured_output_or_with_string_ids(caplog):
    with ServerProcess(no_structured=True, string_ids=True, model=MODEL) as server:
        judge = judge_for(server)
        with caplog.at_level(logging.WARNING):
            assert judge.cluster_groups(groups(4)) == [expected(g) for g in groups(4)]
        assert judge.judge.structured_output == "none" and "rejected structured output" in caplog.text
        assert judge.pop_stats().get("invalid_answers", 0) == 0


@pytest.mark.slow
def test_soak_500_groups_with_30_percent_transport_failures():
    """Resets, 500s, 503s, 429s and hangs on 30% of requests: no crash, every group accounted for, and the
    judge's counters match what the server saw."""
    with ServerProcess(slots=8, fail_frac=0.3, model=MODEL, seed=3) as server:
        # a hang is waited out for 2 s: a real answer can take over 0.5 s on a loaded machine, and would then be
        # counted a timeout that the server did not inject
        policy = RetryPolicy(timeout=2.0, budget=20, base_delay=0.02, max_delay=0.3, max_retry_after=0.1)
        judge = judge_for(server, retry=policy, max_concurrency=32)
        results = []
        for b in range(5):
            batch = groups(100, tag=f"b{b}-")
            for result, group in zip(judge.judge_groups(batch), batch, strict=True):
                assert result.labels == (expected(group) if result.fallback is None else [0, 1, 2, 3])
                results.append(result)
        stats = judge.pop_stats()
        served = server.stats()
        failures = {k.split("/")[1]: v for k, v in served.items() if k.startswith("failure/")}
        assert len(results) == 500 and stats["groups"] == 500
        fell_back = stats.get("fallback/distinct", 0)
        assert fell_back == sum(r.fallback is not None for r in results) and fell_back <= 5
        assert stats["calls"] == served["received"]
        assert 0.25 < sum(failures.values()) / served["received"] < 0.35
        assert stats["rate_limited"] == failures["429"] and stats["timeouts"] == failures["hang"]
        assert stats["server_errors"] == failures["500"] + failures["503"] + failures["reset"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def training_config(tmp_path, **overrides) -> PolyEPOConfig:
    changed = dict(num_generations=4, set_size=2, max_completion_length=4, max_steps=3, bf16=False)
    return small_config(tmp_path / "out", **{**changed, **overrides})


def test_training_logs_judge_metrics_from_a_real_server(model_dir, tmp_path):
    with ServerProcess(slots=1, latency=0.01, invalid_frac=0.3, model=MODEL) as server:
        args = training_config(tmp_path, judge="openai", judge_base_url=server.base_url, judge_model=MODEL)
        trainer = PolyEPOTrainer(
            model=str(model_dir),
            reward_funcs=lambda completions, **kw: [float(len(c) % 2) for c in completions],
            args=args,
            train_dataset=toy_dataset(),
        )
        trainer.train()
    logged = [entry for entry in trainer.state.log_history if "judge/fallback_frac" in entry]
    assert len(logged) == 3
    for entry in logged:
        assert 0 <= entry["judge/fallback_frac"] <= 1 and entry["judge/latency_p95"] >= entry["judge/latency_p50"] > 0
        assert entry["judge/prompt_tokens"] > 0 and "judge/invalid_answers" in entry and "judge/retries" in entry
    assert sum(entry["judge/invalid_answers"] for entry in logged) > 0
    # the server's strategy names reach the completions table and the audit trail, one name per cluster
    extra = trainer._logs["extra"]
    judged = [(c, s) for c, s, f in zip(extra["cluster"], extra["strategy"], extra["fallback"], strict=True) if not f]
    assert judged and all(s.startswith("ends with ") for _, s in judged)
    records = [r for r in read_audit(tmp_path / "out") if r["fallback"] is None]
    assert records and all(s.startswith("ends with ") for r in records for s in r["strategies"])
    for record in records:
        names = dict(zip(record["cluster_ids"], record["strategies"], strict=True))
        assert len(set(names.values())) == len(names)


def test_training_stops_when_the_judge_keeps_failing(model_dir, tmp_path):
    port = free_port()
    args = training_config(
        tmp_path,
        max_steps=10,
        judge=f"openai:http://127.0.0.1:{port}/v1/{MODEL}",
        judge_retry_budget=0.2,
        judge_max_fallback_frac=0.5,
        judge_fallback_patience=2,
        judge_max_outage_seconds=0,  # fall back instead of waiting the outage out
    )
    trainer = PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=lambda completions, **kw: [1.0] * len(completions),
        args=args,
        train_dataset=toy_dataset(),
        check_judge=False,  # no server at all: the run's own outage handling is what is tested
    )
    with pytest.raises(JudgeFailing) as error:
        trainer.train()
    message = str(error.value)
    assert "100%" in message and "judge_max_fallback_frac=0.5" in message and "2 steps in a row" in message
    assert f"127.0.0.1:{port}" in message and "cannot connect" in message
    assert trainer.state.global_step == 1  # the second failing step stopped it before its update
    assert "Saved " in message and (tmp_path / "out" / "checkpoint-1" / "trainer_state.json").exists()


class StopServerAfter(TrainerCallback):
    """Kills the judge server at the end of step ``step`` and starts it again on the same port ``down`` seconds
    later, from another thread, while training goes on."""

    def __init__(self, server: ServerProcess, step: int, down: float | None) -> None:
        self.server, self.step, self.down = server, step, down
        self.restarted = threading.Event()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            self.server.kill()
            if self.down is not None:
                threading.Timer(self.down, lambda: (self.server.start(), self.restarted.set())).start()
        return control


def outage_trainer(model_dir, tmp_path, server, **overrides) -> PolyEPOTrainer:
    """A Poly-EPO trainer judged by ``server`` with a 0.3 s retry budget (an outage outlasts it)."""
    args = training_config(
        tmp_path,
        judge="openai",
        judge_base_url=server.base_url,
        judge_model=MODEL,
        judge_retry_budget=0.3,
        **overrides,
    )
    return PolyEPOTrainer(
        model=str(model_dir),
        reward_funcs=lambda completions, **kw: [float(len(c) % 2) for c in completions],
        args=args,
        train_dataset=toy_dataset(),
    )


@pytest.mark.slow
def test_a_judge_outage_is_waited_out_and_nothing_falls_back(model_dir, tmp_path, caplog):
    """The server is killed after step 1 and comes back 4 s later, far past the 0.3 s retry budget: step 2 waits
    for it (logging why), then training goes on; no group of any step fell back."""
    with ServerProcess(slots=2, latency=0.01, model=MODEL) as server:
        trainer = outage_trainer(model_dir, tmp_path, server, max_steps=3, judge_max_outage_seconds=120)
        outage = StopServerAfter(server, step=1, down=4.0)
        trainer.add_callback(outage)
        with caplog.at_level(logging.WARNING, logger="poly_epo_trl.judges"):
            trainer.train()
        assert outage.restarted.is_set()
    logged = [entry for entry in trainer.state.log_history if "judge/fallback_frac" in entry]
    assert [entry["judge/fallback_frac"] for entry in logged] == [0.0, 0.0, 0.0]
    assert logged[1]["judge/outages"] >= 1 and logged[1]["judge/wait_seconds"] > 3.0
    assert any(
        "is down: no answer for" in r.getMessage() and "nothing falls back" in r.getMessage() for r in caplog.records
    )


def test_an_outage_past_the_limit_saves_the_last_step_and_stops(model_dir, tmp_path):
    """The server never comes back: after judge_max_outage_seconds the run stops with the cause, and a checkpoint
    of step 2 (the last completed step) is there to resume from."""
    with ServerProcess(slots=2, latency=0.01, model=MODEL) as server:
        trainer = outage_trainer(model_dir, tmp_path, server, max_steps=5, judge_max_outage_seconds=2)
        trainer.add_callback(StopServerAfter(server, step=2, down=None))
        start = time.monotonic()
        with pytest.raises(JudgeFailing) as error:
            trainer.train()
    message = str(error.value)
    assert "has not answered for" in message and "judge_max_outage_seconds=2" in message, message
    assert "checkpoint-2" in message and trainer.state.global_step == 2
    assert (tmp_path / "out" / "checkpoint-2" / "resume_state_rank0.pt").exists()
    assert 2.0 <= time.monotonic() - start < 30


def test_train_command_stops_with_a_message_and_exit_code_1(tmp_path, capsys, monkeypatch):
    from poly_epo_trl.commands.train import main

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    port = free_port()
    argv = ["--config", "recipes/tiny/poly_epo/config_cpu.yaml", "--output_dir", str(tmp_path / "out")]
    argv += ["--judge", f"openai:http://127.0.0.1:{port}/v1/{MODEL}", "--judge_retry_budget", "0.1"]
    argv += ["--check_judge", "false", "--max_steps", "6", "--judge_fallback_patience", "2"]
    argv += ["--judge_max_outage_seconds", "0"]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "error: the judge at http://127.0.0.1" in err and "judge_max_fallback_frac=0.5" in err
    assert "Traceback" not in err


def test_a_large_group_is_judged_in_parts_with_one_numbering(tmp_path):
    """Groups of 24 at a cap of 8 per request: 3 requests each, later ones listing the strategies found so far
    (with the server's own strategy texts); the ids equal those of one request per group, and a cached group is
    not asked again."""

    def answer(g: int, i: int) -> str:
        return f"Step {i}: \\boxed{{{(g * i + i // 9) % 6}}}" if i % 7 else "DEGENERATE"

    batch = [(f"Problem {g}", [answer(g, i) for i in range(24)]) for g in range(6)]

    def by_value(completions: list[str]) -> list[int]:
        first: dict[str, int] = {}
        return [100 if c == "DEGENERATE" else first.setdefault(c.rsplit("{", 1)[1], len(first)) for c in completions]

    with ServerProcess(slots=2, latency=0.02, model=MODEL) as server:
        whole = judge_for(server).cluster_groups(batch)
        assert whole == [by_value(completions) for _, completions in batch]
        judge = judge_for(server, max_responses_per_request=8, cache_dir=tmp_path)
        assert judge.cluster_groups(batch) == whole
        stats = judge.pop_stats()
        assert stats["split_requests"] == 18 and stats["calls"] == 18 and "fallback/distinct" not in stats
        assert judge_for(server, max_responses_per_request=8, cache_dir=tmp_path).cluster_groups(batch) == whole
        assert server.stats()["completed"] == 6 + 18
