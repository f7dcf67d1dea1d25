"""Poly-EPO's own code waits for the GPU a fixed, small number of times a step, however many groups the step has.

A read of a GPU tensor from the host (``.item()``, ``.tolist()``, ``.cpu()``, ``float(t)``, ...) waits for every
kernel queued before it: a few of them per group made Poly-EPO's bookkeeping cost 22 ms a step on an H100. The step's
path copies what it needs to the host once (``trainer.step.to_host``) and keeps its bookkeeping there. On CPU the
"device" is the host, so this test marks the device's tensors: GRPOTrainer's rewards (and the gathers) come back as
``Device`` tensors, and every read of one from the host counts, as would every ``to_host``."""

import pytest
import torch
from tiny import SMALL, save_tiny_model, toy_dataset
from trl import GRPOTrainer

from poly_epo_trl import GRPODivTrainer, PolyEPOConfig, PolyEPOTrainer
from poly_epo_trl.tasks.sum_pair import pair_judge, sum_pair_reward
from poly_epo_trl.trainer import step as step_module

READS: list[str] = []


class Device(torch.Tensor):
    """A tensor standing for one on the GPU: operations keep it a ``Device``, reading it from the host counts."""

    def item(self):
        READS.append("item")
        return super().item()

    def tolist(self):
        READS.append("tolist")
        return super().tolist()

    def numpy(self, *args, **kwargs):
        READS.append("numpy")
        return super().numpy(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        READS.append("cpu")
        return super().cpu(*args, **kwargs).as_subclass(torch.Tensor)

    def __bool__(self):
        READS.append("bool")
        return super().__bool__()

    def __float__(self):
        READS.append("float")
        return super().__float__()

    def __int__(self):
        READS.append("int")
        return super().__int__()


def reads_per_step(monkeypatch, tmp_path, trainer_cls, prompts_per_step: int) -> list[int]:
    """The device reads each training step of ``trainer_cls`` makes in its own code: in its ``_calculate_rewards``
    and ``_generate_and_score_completions`` after GRPOTrainer's own (whose reads are GRPOTrainer's)."""
    counts: list[int] = []
    seams = ("_calculate_rewards", "_generate_and_score_completions")

    def theirs(name):
        original = getattr(GRPOTrainer, name)

        def wrapper(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            READS.clear()  # GRPOTrainer's reads are its own; from here on they are ours
            if name == "_calculate_rewards":
                out = out.as_subclass(Device)  # the rewards, gathered on the device
            return out

        return wrapper

    def to_host(tensor):
        READS.append("to_host")
        return tensor.detach().to("cpu").as_subclass(torch.Tensor)

    for name in seams:
        monkeypatch.setattr(GRPOTrainer, name, theirs(name))
    monkeypatch.setattr(step_module, "to_host", to_host)
    trainer = trainer_cls(
        model=str(save_tiny_model(tmp_path / "model")),
        reward_funcs=sum_pair_reward,
        args=PolyEPOConfig(
            **{**SMALL, "output_dir": str(tmp_path / "out"), "per_device_train_batch_size": 8 * prompts_per_step}
        ),
        train_dataset=toy_dataset(range(20, 20 + 8 * prompts_per_step)),
        judge=pair_judge,
    )

    def ours(name):
        original = getattr(PolyEPOTrainer, name)

        def wrapper(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if name == "_calculate_rewards":
                counts.append(len(READS))
            else:
                counts[-1] += len(READS)
            return out

        return wrapper

    for name in seams:
        monkeypatch.setattr(PolyEPOTrainer, name, ours(name))
    trainer.train()
    return counts


@pytest.mark.parametrize("trainer_cls", [PolyEPOTrainer, GRPODivTrainer])
def test_a_steps_device_reads_are_few_and_do_not_grow_with_the_groups(monkeypatch, tmp_path, trainer_cls):
    small = reads_per_step(monkeypatch, tmp_path / "small", trainer_cls, prompts_per_step=1)
    large = reads_per_step(monkeypatch, tmp_path / "large", trainer_cls, prompts_per_step=16)
    assert set(small) == set(large) == {1}, (small, large)  # the one copy of the rewards to the host
