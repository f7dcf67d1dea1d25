"""The shipped accelerate configs, run for real on CPU: ``accelerate launch`` with 2 processes on gloo, the tiny CPU
recipe, ZeRO-2, ZeRO-3 and FSDP2 against DDP, full model and LoRA, Poly-EPO, GRPO+DIV with an audit judge and UCPO
(``make test-engines``).

Each run must use the engine its config asks for (the line the run prints, and the checkpoint layout that engine
writes), log the metrics and end with the final weights of a DDP run of the same recipe, leave a model that
``from_pretrained`` loads, and resume exactly after kill -9. FSDP on CPU goes through ``fsdp_on_cpu.py`` (accelerate
gives FSDP only on GPUs); without it the run is refused at the door, which this file checks too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch
from built_once import built_once
from ports import free_port

from poly_epo_trl.models import resolve_model
from poly_epo_trl.trainer.resume import complete_checkpoints

pytestmark = [
    pytest.mark.engines,
    pytest.mark.skipif(
        importlib.util.find_spec("deepspeed") is None,
        reason="needs DeepSpeed: pip install '.[deepspeed]' (make install does), then make test-engines",
    ),
]

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "recipes" / "accelerate_configs"
RECIPE = "recipes/tiny/poly_epo/config_cpu.yaml"
SHIM = ROOT / "tests" / "helpers" / "fsdp_on_cpu.py"
ENGINES = {  # name: (accelerate config, what the run must say it uses)
    "ddp": ("ddp.yaml", "DDP"),
    "zero2": ("zero2.yaml", "DeepSpeed ZeRO-2"),
    "zero3": ("zero3.yaml", "DeepSpeed ZeRO-3"),
    "fsdp2": ("fsdp.yaml", "FSDP2"),
}
VARIANTS = {
    "poly_epo": [],
    "lora": ["--use_peft", "true", "--lora_r", "8", "--lora_alpha", "16"],
    "grpo_div": ["--trainer", "grpo_div", "--audit_judge", "answer", "--audit_every", "2"],
    "ucpo": ["--trainer", "ucpo"],  # the log-prob channel: each process's sums and lengths gathered into the batch
}
STEPS, SAVE_EVERY = 6, 3
# 6 steps of 2 x 16 rows (4 groups of 8), a checkpoint every 3 steps
RECIPE_ARGS = [
    "--config", RECIPE, "--max_steps", str(STEPS), "--per_device_train_batch_size", "16", "--logging_steps", "1",
    "--save_strategy", "steps", "--save_steps", str(SAVE_EVERY),
]  # fmt: skip
# the same reward taking 0.4 s a step, under the same name (the same metrics): a kill lands between checkpoints
SLOW = ["--reward_funcs", "slow_engine_reward:sum_pair_reward"]
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "WANDB_MODE": "disabled",
    "PYTHONFAULTHANDLER": "1",  # a process that dies of a signal prints every thread's Python stack into the log
    "PYTHONPATH": f"{ROOT / 'tests' / 'helpers'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
}
TIMING = (
    "step_time",
    "time/",
    "judge/seconds",
    "judge_audit/seconds",
    "judge/wait_seconds",
    "train_runtime",
    "_per_second",
    "latency",
)
# Measured equal to DDP at every step and in the final weights: ZeRO-2 always, FSDP2 on the full model.
EXACT = {("zero2", "poly_epo"), ("zero2", "lora"), ("fsdp2", "poly_epo")}
# ZeRO-3 (and FSDP2 with LoRA) reduce gradients in partitions, in another order than DDP's all-reduce: float32 sums
# differ in the last bits. Adam divides each gradient entry by its own running scale, so an entry that is only
# round-off (LoRA's B starts at zero) still takes a full-size step, and within a few steps a sampled token can
# differ. Measured at the first checkpoint (3 steps): weights within 2.2e-8 (LoRA) to 5.2e-6 (GRPO+DIV) of DDP's,
# metrics to 6 digits; at step 5 grad_norm differs in the 3rd digit (ZeRO-3 LoRA), and in step 6 the samples do.
# The weights' bound is a sixth of one Adam step at the recipe's lr (6e-4): a gradient lost, doubled or left
# unreduced moves every trained entry by about a step.
ROUND_OFF_METRICS_RTOL, ROUND_OFF_WEIGHTS_ATOL = 1e-4, 1e-4


def launch_argv(engine: str, *extra: str, config: Path | None = None, machines: tuple[int, int] | None = None):
    """``accelerate launch`` of the shipped config for ``engine`` on 2 CPU processes (``--mixed_precision no``: the
    configs' bf16 is for GPUs), training the tiny recipe."""
    config = config or CONFIGS / ENGINES[engine][0]
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config)]
    argv += ["--num_processes", "2", "--mixed_precision", "no"]
    if machines is None:
        argv += ["--main_process_port", str(free_port())]
    else:  # (this machine's rank, the rendezvous port): 2 machines of 1 process, meeting on loopback
        argv += ["--num_machines", "2", "--machine_rank", str(machines[0])]
        argv += ["--main_process_ip", "127.0.0.1", "--main_process_port", str(machines[1])]
    target = [str(SHIM)] if engine == "fsdp2" else ["-m", "poly_epo_trl.train"]
    return [*argv, *target, *RECIPE_ARGS, *extra]


class Launch:
    """One ``accelerate launch`` in its own process group (so kill -9 reaches every process, as a node loss does)."""

    def __init__(self, argv: list[str], log: Path, **env: str) -> None:
        self.log = log
        self.handle = log.open("w")
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env={**ENV, **env}, stdout=self.handle, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait(self, timeout: float = 600) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self.handle.close()

    def output(self) -> str:
        return self.log.read_text()

    def signal(self, signum: int) -> None:
        """``signum`` to the launcher and every process under it, as a scheduler signals all of a job's processes
        (torchrun starts its workers in sessions of their own, which a process-group signal would not reach)."""
        launcher = psutil.Process(self.process.pid)
        for process in [*launcher.children(recursive=True), launcher]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signum)

    def kill(self) -> None:
        """kill -9 of the whole machine: the launcher and every process under it."""
        self.signal(signal.SIGKILL)
        self.wait()

    def steps(self) -> int:
        """Steps logged so far (by the main process)."""
        return self.log.read_text().count("'loss':")


def train(engine: str, out: Path, *extra: str) -> str:
    """Run to the end; the output. Fails with the end of the log when the run fails."""
    run = Launch(launch_argv(engine, *extra, "--output_dir", str(out)), out.with_suffix(".log"))
    code = run.wait()
    assert code == 0, run.output()[-6000:]
    return run.output()


def logged(out: Path) -> list[dict]:
    """Every step's logged metrics (the last checkpoint's log history), timings left out."""
    last = complete_checkpoints(str(out), 2)[0][-1]
    history = json.loads((Path(last) / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if "loss" in entry]
    return [{k: v for k, v in entry.items() if not any(t in k for t in TIMING)} for entry in steps]


def final_weights(out: Path, lora: bool) -> dict[str, torch.Tensor]:
    """The model in ``out`` as ``from_pretrained`` loads it (for LoRA, the base model with the adapter), found as
    ``poly-epo eval`` finds it (``resolve_model``: FSDP shards merged)."""
    path = resolve_model(str(out))
    if lora:
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(path)
    else:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(path)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def assert_same_metrics(reference: list[dict], other: list[dict], rtol: float) -> None:
    assert len(reference) == len(other)
    for step, (want, got) in enumerate(zip(reference, other, strict=True), start=1):
        assert want.keys() == got.keys(), step
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=rtol, abs=rtol * 1e-2), (step, key, value, got[key])


def assert_no_traceback_of_ours(output: str) -> None:
    """No traceback through the package or transformers (torchrun's launcher prints its own ChildFailedError report
    when a worker exits non-zero: that one is the launcher's)."""
    import transformers

    ours = (str(ROOT / "poly_epo_trl"), str(Path(transformers.__file__).parent))  # by folder: a clone may be named
    frames = [str((ROOT / f).resolve()) for f in re.findall(r'File "([^"]+)"', output)]  # poly_epo_trl itself
    assert not [f for f in frames if f.startswith(ours)], output[-4000:]


def assert_engine_layout(engine: str, out: Path, output: str) -> None:
    """The engine the run says it used, and the files only that engine writes into a checkpoint."""
    assert f"engine: {ENGINES[engine][1]} on 2 processes" in output, output[-3000:]
    checkpoint = out / f"checkpoint-{SAVE_EVERY}"
    names = {p.name for p in checkpoint.iterdir()}
    if engine.startswith("zero"):
        states = list((checkpoint / f"global_step{SAVE_EVERY}").glob("*zero_pp_rank_*optim_states.pt"))
        assert len(states) == 2, names  # each process saved its partition of the optimizer state
    elif engine == "fsdp2":
        assert {"pytorch_model_fsdp_0", "optimizer_0"} <= names, names  # distributed checkpoint shards
    else:
        assert "optimizer.pt" in names, names


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Each (engine, variant) trained once per session, on demand: its output folder and log."""

    def get(engine: str, variant: str) -> tuple[Path, str]:
        def build(out: Path) -> None:
            train(engine, out, *VARIANTS[variant])

        out = built_once(tmp_path_factory, f"engines-{engine}-{variant}", build)  # once for every xdist worker
        return out, out.with_suffix(".log").read_text()

    return get


# Every engine with the full model and LoRA; under ZeRO-3, the engine furthest from DDP, GRPO+DIV (the same trainer,
# another advantage: nothing an engine sees differs) with an audit judge (its verdicts gathered from both processes),
# and UCPO (the log-prob channel's forward pass over sharded parameters, its sums gathered from both processes)
SHARDED = [("zero2", "poly_epo"), ("zero2", "lora"), ("zero3", "poly_epo"), ("zero3", "lora"), ("zero3", "grpo_div"),
           ("zero3", "ucpo"), ("fsdp2", "poly_epo"), ("fsdp2", "lora")]  # fmt: skip


@pytest.mark.parametrize(("engine", "variant"), SHARDED)
def test_a_sharded_engine_trains_as_ddp_does(runs, engine, variant):
    """Up to the first checkpoint every engine matches DDP (metrics, and that checkpoint's weights, within
    ROUND_OFF_*); where the engine sums gradients as DDP does (EXACT) every step's metrics and the final weights are
    equal too. Elsewhere the final model loads and trained on after the checkpoint."""
    reference, _ = runs("ddp", variant)
    out, output = runs(engine, variant)
    assert_engine_layout(engine, out, output)
    lora = variant == "lora"
    assert len(logged(out)) == STEPS
    if variant == "poly_epo":
        assert all(step["poly_epo/advantage_abs_mean"] > 0 for step in logged(out))  # set advantages reached the loss
    if variant == "grpo_div":  # audited at steps 1, 3 and 5, over groups of both processes
        audits = [step for step in logged(out) if "judge_audit/adjusted_rand" in step]
        assert [step["step"] for step in audits] == [1, 3, 5]
        assert all(step["judge_audit/distinct_audit"] > 0 for step in audits)
    if variant == "ucpo":  # a batch without log-probabilities stops UCPO: each step's reached its advantages
        assert all(step["ucpo/advantage_abs_mean"] > 0 for step in logged(out))
    assert_same_metrics(logged(reference)[:SAVE_EVERY], logged(out)[:SAVE_EVERY], ROUND_OFF_METRICS_RTOL)
    checkpoint = f"checkpoint-{SAVE_EVERY}"
    at_checkpoint = final_weights(out / checkpoint, lora)
    difference = max_difference(final_weights(reference / checkpoint, lora), at_checkpoint)
    print(f"{engine} {variant}: weights at {checkpoint} differ from DDP's by at most {difference:.3g}")
    assert difference <= ROUND_OFF_WEIGHTS_ATOL
    if (engine, variant) in EXACT:
        assert_same_metrics(logged(reference), logged(out), 1e-6)
        difference = max_difference(final_weights(reference, lora), final_weights(out, lora))
        print(f"{engine} {variant}: final weights differ from DDP's by at most {difference:.3g}")
        assert difference == 0.0
    else:
        assert max_difference(at_checkpoint, final_weights(out, lora)) > 0  # the final model is the trained-on one


@pytest.mark.parametrize(
    ("engine", "variant"),
    [("ddp", "poly_epo"), ("zero2", "poly_epo"), ("zero3", "poly_epo"), ("fsdp2", "poly_epo"), ("zero3", "lora"),
     ("fsdp2", "lora")],
)  # fmt: skip
def test_kill_9_after_a_checkpoint_then_the_same_command_resumes_exactly(runs, tmp_path, engine, variant):
    """kill -9 of every process once the first checkpoint is complete, then the same command: the run ends with the
    metrics and weights of its uninterrupted run (the same engine). LoRA's resume (the adapter's weights and
    optimizer state) under DeepSpeed is one path for ZeRO-2 and ZeRO-3 in transformers: ZeRO-3's is run."""
    reference, _ = runs(engine, variant)
    argv = launch_argv(engine, *VARIANTS[variant], *SLOW, "--output_dir", str(tmp_path / "out"))
    run = Launch(argv, tmp_path / "killed.log")
    deadline = time.monotonic() + 300
    while not complete_checkpoints(str(tmp_path / "out"), 2)[0]:
        assert run.process.poll() is None and time.monotonic() < deadline, run.output()[-4000:]
        time.sleep(0.05)
    run.kill()
    assert not (tmp_path / "out" / "model.safetensors").exists(), "the run ended before the kill"
    again = Launch(argv, tmp_path / "resumed.log")
    assert again.wait() == 0, again.output()[-6000:]
    assert f"resuming from {tmp_path / 'out' / f'checkpoint-{SAVE_EVERY}'}" in again.output()
    assert_same_metrics(logged(reference), logged(tmp_path / "out"), 1e-6)
    lora = variant == "lora"
    assert max_difference(final_weights(reference, lora), final_weights(tmp_path / "out", lora)) == 0.0


@pytest.mark.parametrize("engine", ["zero2", "zero3", "fsdp2"])
def test_one_process_names_its_engine_and_saves_a_loadable_model(tmp_path, engine):
    """One process through the shipped DeepSpeed and FSDP configs (one GPU with ZeRO-3 offload is a common way to
    fit a model): the engine line names the engine, not "one process", and the final model loads."""
    argv = launch_argv(engine, "--max_steps", "2", "--output_dir", str(tmp_path / "out"))
    argv[argv.index("--num_processes") + 1] = "1"
    run = Launch(argv, tmp_path / "log")
    assert run.wait() == 0, run.output()[-4000:]
    assert f"engine: {ENGINES[engine][1]} on 1 process, sharding" in run.output()
    assert final_weights(tmp_path / "out", lora=False)


def test_fsdp_on_cpu_without_the_shim_is_refused_at_the_door(tmp_path):
    """accelerate gives DDP when FSDP is asked for on CPU: the run stops before training with the fix. When this
    fails because accelerate runs FSDP on CPU, ``fsdp_on_cpu.py`` is no longer needed."""
    argv = launch_argv("ddp", "--output_dir", str(tmp_path / "out"), config=CONFIGS / "fsdp.yaml")
    run = Launch(argv, tmp_path / "log")
    assert run.wait() != 0
    errors = [line for line in run.output().splitlines() if line.startswith("error:")]
    assert errors and all(line == errors[0] for line in errors), run.output()[-3000:]
    assert "asked for FSDP, but the model would be trained with DDP" in errors[0]
    assert_no_traceback_of_ours(run.output())
    assert not list((tmp_path / "out").glob("checkpoint-*"))


def test_bf16_in_the_launcher_but_not_in_the_recipe_is_refused_at_the_door(tmp_path):
    """The shipped configs say bf16; the CPU recipe says bf16: false. DeepSpeed would stop with transformers'
    ValueError, DDP and FSDP would autocast silently: the run stops with one line instead."""
    argv = launch_argv("zero2", "--output_dir", str(tmp_path / "out"))
    argv[argv.index("--mixed_precision") + 1] = "bf16"
    run = Launch(argv, tmp_path / "log")
    assert run.wait() != 0
    errors = {line for line in run.output().splitlines() if line.startswith("error:")}
    assert len(errors) == 1, run.output()[-3000:]
    assert "mixed_precision=bf16" in errors.pop()
    assert_no_traceback_of_ours(run.output())


def two_machines(tmp_path: Path, port: int, name: str) -> list[Launch]:
    """The shipped multi_node_zero3.yaml as two machines on this one (machine_rank 0 and 1), judged by a judge that
    records which process judged each group."""
    out = tmp_path / "out"
    extra = [*SLOW, "--output_dir", str(out), "--check_judge", "false"]
    extra += ["--judge", "python:rank_judge:pair_judge_by_rank"]
    config = CONFIGS / "multi_node_zero3.yaml"
    return [
        Launch(
            launch_argv("zero3", *extra, config=config, machines=(rank, port)),
            tmp_path / f"{name}-machine{rank}.log",
            RANK_JUDGE_LOG=str(tmp_path / "judged.txt"),
        )
        for rank in (0, 1)
    ]


def test_two_machines_share_the_judge_stop_together_on_sigterm_and_resume(runs, tmp_path):
    """SIGTERM to every process of machine 1 (as a scheduler preempting one node does): both machines stop after
    the same step with a complete checkpoint; the same two commands resume and end with the weights of a
    one-machine ZeRO-3 run of the same recipe."""
    reference, _ = runs("zero3", "poly_epo")
    port = free_port()
    machines = two_machines(tmp_path, port, "first")
    deadline = time.monotonic() + 300
    while machines[0].steps() < 2:
        assert all(m.process.poll() is None for m in machines), machines[0].output()[-4000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    machines[1].signal(signal.SIGTERM)
    for machine in machines:
        assert machine.wait() != 0, machine.output()[-3000:]
    stopped = [re.search(r"stopped by SIGTERM after step (\d+)", m.output()) for m in machines]
    assert all(stopped), [m.output()[-3000:] for m in machines]
    steps = {int(found.group(1)) for found in stopped}
    assert len(steps) == 1 and 2 <= min(steps) < STEPS, steps
    step = steps.pop()
    assert f"checkpoint-{step}" in {Path(p).name for p in complete_checkpoints(str(tmp_path / "out"), 2)[0]}
    assert "engine: DeepSpeed ZeRO-3 on 2 processes on 2 machines" in machines[0].output()
    # 4 groups a step, 2 owned by each process: both machines judged, each its own share
    judged = (tmp_path / "judged.txt").read_text().split()
    assert sorted(judged) == ["0"] * (2 * step) + ["1"] * (2 * step), judged

    again = two_machines(tmp_path, port, "again")
    for machine in again:
        assert machine.wait() == 0, machine.output()[-4000:]
        assert f"resuming from {tmp_path / 'out' / f'checkpoint-{step}'}" in machine.output()
    assert_same_metrics(logged(reference), logged(tmp_path / "out"), 1e-6)
    difference = max_difference(final_weights(reference, False), final_weights(tmp_path / "out", False))
    print(f"two machines, stopped after step {step} and resumed: weights differ from one machine's by {difference}")
    assert difference == 0.0
