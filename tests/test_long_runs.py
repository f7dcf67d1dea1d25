"""Long runs on a cluster, as real processes: ``poly-epo train`` on the CPU recipe killed with -9 at a random step,
stopped with SIGTERM between checkpoints, killed while a checkpoint is being written, and out of disk space; each
restarted with the same command must end with the weights of an uninterrupted run.

(A judge server stopped for longer than the retry budget is in ``test_judge_server.py``.)
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from built_once import built_once
from training_run import BASE, ENV, RECIPE, ROOT, Run, max_difference

from poly_epo_trl.commands import agreement
from poly_epo_trl.judges.audit import read_audit
from poly_epo_trl.trainer.preemption import SAME_STOP_SECONDS

# TRL trains 2 steps on each buffered generation batch, each batch twice, over 2 accumulated micro-batches
BUFFERED = ["--steps_per_generation", "2", "--num_iterations", "2", "--gradient_accumulation_steps", "2"]
BUFFERED += ["--per_device_train_batch_size", "32"]
SHAPES = {"plain": [], "buffered": BUFFERED}


def stopped_step(output: str) -> int:
    """The step a run stopped by SIGTERM says it saved."""
    return int(re.search(r"stopped by SIGTERM after step (\d+)", output).group(1))


def assert_same_audit(reference: Path, resumed: Path) -> None:
    """The interrupted and resumed run's audit trail holds every group the uninterrupted run judged, once, judged
    the same way (only the judge's seconds differ)."""
    timeless = [[{k: v for k, v in r.items() if k != "seconds"} for r in read_audit(d)] for d in (reference, resumed)]
    assert len({(r["step"], r["group"]) for r in timeless[0]}) == len(timeless[0]) > 0
    assert max(r["step"] for r in timeless[0]) >= 39  # the last generation: step 40, or 39 when batches serve 2 steps
    assert timeless[1] == timeless[0]


class References:
    """The uninterrupted runs' output folders, one per shape, each trained once per session (every xdist worker
    reads the same one) when a test first asks for it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp_path_factory = tmp_path_factory

    def __getitem__(self, shape: str) -> Path:
        def train(folder: Path) -> None:
            run = Run(folder, *SHAPES[shape])
            assert run.finish() == 0, run.output()

        return built_once(self.tmp_path_factory, f"long-runs-reference-{shape}", train)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> References:
    return References(tmp_path_factory)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.slow
def test_kill_9_at_a_random_step_then_the_same_command_ends_with_the_same_weights(reference, tmp_path, shape):
    step = random.Random().randint(11, 38)
    print(f"kill -9 after step {step}")
    run = Run(tmp_path, *SHAPES[shape])
    run.wait_for_step(step)
    run.process.kill()
    assert run.finish() == -signal.SIGKILL
    again = Run(tmp_path, *SHAPES[shape])
    assert again.finish() == 0, again.output()
    assert "resuming from" in again.output()
    assert max_difference(reference[shape] / "model.safetensors", tmp_path / "model.safetensors") <= 1e-6
    assert_same_audit(reference[shape], tmp_path)
    # the run's own judge on the groups it trained on agrees with the labels it gave them
    flags = f"--judged_groups {tmp_path} --judges sum_pair --output_dir {tmp_path / 'agreement'}"
    report = agreement.run(agreement.parse(flags.split()))
    (pair,) = report["pairs"]
    assert pair["judges"] == ["recorded", "sum_pair"] and pair["ari"]["mean"] == 1.0


@pytest.mark.slow
def test_sigterm_between_checkpoints_saves_every_step_done_and_resumes_exactly(reference, tmp_path):
    run = Run(tmp_path)
    run.wait_for_step(15)
    seen = run.steps
    code, seconds, output = run.sigterm()
    assert code == 128 + signal.SIGTERM, output
    assert "stopped by SIGTERM after step" in output and "Traceback" not in output
    stopped = stopped_step(output)
    assert stopped >= seen  # every step done before the signal is kept
    assert (tmp_path / f"checkpoint-{stopped}" / "trainer_state.json").exists()
    assert seconds < 25, seconds
    print(f"SIGTERM after {seen} logged steps: checkpoint-{stopped}, exited {seconds:.2f} s after the signal")
    again = Run(tmp_path)
    assert again.finish() == 0, again.output()
    assert f"resuming from {tmp_path / f'checkpoint-{stopped}'}" in again.output()
    assert max_difference(reference["plain"] / "model.safetensors", tmp_path / "model.safetensors") <= 1e-6
    assert_same_audit(reference["plain"], tmp_path)


@pytest.mark.slow
def test_a_second_signal_exits_at_once(tmp_path):
    """Steps of 3 s (a slow reward): the first SIGTERM waits for the step's end, the second does not. The second is
    sent once the run has said it received the first, past the window in which a repeat counts as the same stop: a
    busy machine that delays the first signal's handler cannot turn the pair into one stop."""
    run = Run(tmp_path, "--reward_funcs", "slow_reward:slower_sum_pair_reward", "--save_steps", "1000")
    run.wait_for_step(1)
    run.process.send_signal(signal.SIGTERM)
    run.wait_for_text("SIGTERM received")
    time.sleep(SAME_STOP_SECONDS + 0.2)
    run.process.send_signal(signal.SIGTERM)
    assert run.finish() == 128 + signal.SIGTERM, run.output()[-2000:]
    assert "SIGTERM again: exiting now" in run.output()
    assert not list(tmp_path.glob("checkpoint-*"))


@pytest.mark.slow
def test_the_same_signal_delivered_twice_at_once_is_one_stop(tmp_path):
    """Under accelerate launch a scheduler's SIGTERM reaches a worker twice (from the scheduler and forwarded by
    torchrun's agent): two signals 20 ms apart still finish the step and save it."""
    run = Run(tmp_path, "--reward_funcs", "slow_reward:slow_sum_pair_reward", "--save_steps", "1000")
    run.wait_for_step(2)
    run.process.send_signal(signal.SIGTERM)
    time.sleep(0.02)
    code, _, output = run.sigterm()
    assert code == 128 + signal.SIGTERM, output
    assert "SIGTERM again" not in output
    assert (tmp_path / f"checkpoint-{stopped_step(output)}" / "trainer_state.json").exists()


@pytest.mark.slow
def test_a_finished_run_started_again_trains_nothing_and_keeps_its_model(tmp_path):
    """transformers, resumed from a run's last checkpoint, trains one step more: a finished job started again (a
    requeue) would overwrite its final model with a step past max_steps. The same command leaves the run as it was,
    and a missing final model (killed while writing it) comes from the last checkpoint."""
    extra = ("--max_steps", "4", "--save_steps", "2")
    assert Run(tmp_path, *extra).finish() == 0
    final = (tmp_path / "model.safetensors").read_bytes()
    again = Run(tmp_path, *extra)
    assert again.finish() == 0, again.output()
    assert again.steps == 0 and "checkpoint-4 is step 4, the run's last: nothing left to train" in again.output()
    assert (tmp_path / "model.safetensors").read_bytes() == final
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    (tmp_path / "model.safetensors").unlink()
    third = Run(tmp_path, *extra)
    assert third.finish() == 0 and "had no final model: copied the one of" in third.output()
    assert (tmp_path / "model.safetensors").read_bytes() == final


@pytest.mark.slow
def test_killed_while_writing_a_checkpoint_resumes_from_the_last_complete_one(reference, tmp_path):
    """kill -9 as soon as checkpoint-20 appears (mid-write, or just after): the restart resumes from a complete
    checkpoint, removes an incomplete one, and ends with the uninterrupted run's weights."""
    run = Run(tmp_path)
    folder = tmp_path / "checkpoint-20"
    while not folder.exists():
        assert run.process.poll() is None, run.output()
        time.sleep(0.001)
    run.process.kill()
    run.finish()
    complete = (folder / "trainer_state.json").exists()
    print(f"checkpoint-20 complete when killed: {complete}; files: {sorted(p.name for p in folder.iterdir())}")
    again = Run(tmp_path)
    assert again.finish() == 0, again.output()
    if complete:
        assert f"resuming from {folder}" in again.output()
    else:
        assert f"skipping {folder}: incomplete" in again.output()
        assert f"resuming from {tmp_path / 'checkpoint-10'}" in again.output()
    assert max_difference(reference["plain"] / "model.safetensors", tmp_path / "model.safetensors") <= 1e-6


@pytest.mark.slow
def test_a_checkpoint_left_half_written_is_never_resumed_from(reference, tmp_path):
    """What a kill mid-save leaves (the weights cut short, no trainer_state.json): skipped and removed."""
    run = Run(tmp_path, "--max_steps", "20")
    assert run.finish() == 0, run.output()
    broken = tmp_path / "checkpoint-20"
    (broken / "trainer_state.json").unlink()
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    (tmp_path / "model.safetensors").unlink()
    again = Run(tmp_path)
    assert again.finish() == 0, again.output()
    assert f"skipping {broken}: incomplete" in again.output()
    assert f"resuming from {tmp_path / 'checkpoint-10'}" in again.output()
    assert max_difference(reference["plain"] / "model.safetensors", tmp_path / "model.safetensors") <= 1e-6


@pytest.fixture
def small_disk(tmp_path):
    """A 5 MiB tmpfs: room for one checkpoint of the tiny model (3.4 MiB) and not two."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.slow
def test_a_full_disk_stops_with_a_clear_error_and_keeps_the_last_good_checkpoint(reference, small_disk):
    out = small_disk / "out"
    run = Run(out, "--max_steps", "20", "--save_steps", "5")
    assert run.finish() == 1
    output = run.output()
    assert "error: No space left on the device of output_dir=" in output and "Traceback" not in output, output
    assert f"{out / 'checkpoint-5'} is the last complete checkpoint" in output
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-5"]
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    again = Run(out, "--max_steps", "20", "--save_steps", "5")
    assert again.finish() == 0, again.output()
    assert f"resuming from {out / 'checkpoint-5'}" in again.output()
    expected = reference["plain"] / "checkpoint-20" / "model.safetensors"  # constant learning rate: step 20 is step 20
    assert max_difference(expected, out / "model.safetensors") <= 1e-6


@pytest.mark.slow
def test_two_processes_stop_after_the_same_step_when_only_one_is_signalled(tmp_path):
    """torchrun with 2 processes; SIGTERM reaches rank 1 only: both stop after the same step, the checkpoint holds
    both ranks' state, and the same command resumes from it and finishes."""
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "-m",
        "poly_epo_trl.train",
    ]
    argv += ["--config", RECIPE, *BASE, "--per_device_train_batch_size", "32", "--output_dir", str(tmp_path)]
    launcher = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(launcher.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while sum(line.count("'loss':") for line in list(lines)) < 12:
        assert launcher.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.01)
    workers = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True, text=True).stdout.split()
    ranks = {}
    for pid in workers:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        rank = next(int(v.split(b"=")[1]) for v in environ if v.startswith(b"RANK="))
        ranks[rank] = int(pid)
    os.kill(ranks[1], signal.SIGTERM)
    launcher.wait(120)
    reader.join(10)
    output = "".join(lines)
    stops = [line for line in output.splitlines() if "stopped by SIGTERM after step" in line]
    assert len(stops) == 2, output
    steps = {stopped_step(line) for line in stops}
    assert len(steps) == 1, stops
    checkpoint = tmp_path / f"checkpoint-{steps.pop()}"
    assert (checkpoint / "resume_state_rank0.pt").exists() and (checkpoint / "resume_state_rank1.pt").exists()
    assert (checkpoint / "trainer_state.json").exists()
    assert "resume_state" not in output  # no warning about a missing state file: nothing was cut short
    again = subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"resuming from {checkpoint}" in again.stdout and "resume_state" not in again.stdout + again.stderr


@pytest.mark.slow
def test_sigterm_while_the_judge_is_down_drops_the_step_and_resumes_exactly(tmp_path):
    """A judge server process is killed after step 12; while the step waits for it, SIGTERM: the run saves the last
    completed step at once (no 25 s watchdog), exits 143; the server comes back and the same command ends with the
    weights of an uninterrupted run against the same server."""
    from judge_server import ServerProcess

    with ServerProcess(slots=4, latency=0.0, model="judge") as server:
        judge = ["--judge", "openai", "--judge_base_url", server.base_url, "--judge_model", "judge"]
        judge += ["--judge_retry_budget", "0.5", "--max_steps", "20"]
        reference = tmp_path / "reference"
        run = Run(reference, *judge)
        assert run.finish() == 0, run.output()
        out = tmp_path / "out"
        run = Run(out, *judge)
        run.wait_for_step(12)
        server.kill()
        deadline = time.monotonic() + 60
        while "is down: no answer for" not in run.output():
            assert run.process.poll() is None and time.monotonic() < deadline, run.output()
            time.sleep(0.05)
        code, seconds, output = run.sigterm()
        assert code == 128 + signal.SIGTERM, output
        assert "(the step in progress, still waiting for its judge, was dropped)" in output, output
        stopped = stopped_step(output)
        assert stopped >= 12 and (out / f"checkpoint-{stopped}" / "trainer_state.json").exists()
        assert seconds < 10, seconds
        print(f"SIGTERM during the outage: checkpoint-{stopped}, exited {seconds:.2f} s after the signal")
        server.start()
        again = Run(out, *judge)
        assert again.finish() == 0, again.output()
        assert f"resuming from {out / f'checkpoint-{stopped}'}" in again.output()
        assert "fell back" not in output + again.output()
    assert max_difference(reference / "model.safetensors", out / "model.safetensors") <= 1e-6
