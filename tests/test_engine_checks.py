"""The engine checks without launching anything (the real launches are in test_engines.py): what the launcher asked
for, what the accelerator gives, the refusals' wording, finished runs, and sharded checkpoints without a config."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from accelerate.utils import DistributedType

from poly_epo_trl.commands.train import main
from poly_epo_trl.models import resolve_model
from poly_epo_trl.recipe import RecipeError
from poly_epo_trl.trainer.engines import Engine, asked_engine, engine_mismatch, engine_of
from poly_epo_trl.trainer.resume import finished_step

ROOT = Path(__file__).resolve().parent.parent
RECIPE = str(ROOT / "recipes/tiny/poly_epo/config_cpu.yaml")


def accelerator(kind: DistributedType, processes: int = 2, **state) -> SimpleNamespace:
    return SimpleNamespace(
        distributed_type=kind, num_processes=processes, mixed_precision="no", state=SimpleNamespace(**state)
    )


def test_the_launcher_says_what_it_was_asked_for_in_the_environment():
    assert asked_engine({}) is None
    assert asked_engine({"ACCELERATE_USE_DEEPSPEED": "true"}) == "deepspeed"
    assert asked_engine({"ACCELERATE_USE_FSDP": "True"}) == "fsdp"
    assert asked_engine({"ACCELERATE_USE_FSDP": "false"}) is None


def test_the_engine_is_read_from_the_accelerator():
    zero3 = engine_of(
        accelerator(DistributedType.DEEPSPEED, 16, deepspeed_plugin=SimpleNamespace(zero_stage=3)),
        {"LOCAL_WORLD_SIZE": "8"},
    )
    assert zero3.describe() == (
        "engine: DeepSpeed ZeRO-3 on 16 processes on 2 machines, sharding parameters, gradients and optimizer state; "
        "mixed precision no"
    )
    plugin = SimpleNamespace(fsdp_version=2, state_dict_type=SimpleNamespace(name="SHARDED_STATE_DICT"))
    fsdp = engine_of(accelerator(DistributedType.FSDP, fsdp_plugin=plugin), {})
    assert fsdp.name == "FSDP2" and fsdp.describe().endswith("state dict SHARDED_STATE_DICT")
    assert engine_of(accelerator(DistributedType.MULTI_CPU), {}).name == "DDP"
    alone = engine_of(accelerator(DistributedType.NO, 1), {})
    assert alone.describe() == "engine: one process, nothing sharded; mixed precision no"


def test_one_process_still_names_its_engine():
    """One-GPU ZeRO-3 (with offload, to fit a model) or FSDP with one process: the line names the engine."""
    zero3 = engine_of(accelerator(DistributedType.DEEPSPEED, 1, deepspeed_plugin=SimpleNamespace(zero_stage=3)), {})
    assert zero3.describe() == (
        "engine: DeepSpeed ZeRO-3 on 1 process, sharding parameters, gradients and optimizer state; mixed precision no"
    )
    plugin = SimpleNamespace(fsdp_version=2, state_dict_type=SimpleNamespace(name="FULL_STATE_DICT"))
    fsdp = engine_of(accelerator(DistributedType.FSDP, 1, fsdp_plugin=plugin), {})
    assert fsdp.describe().startswith("engine: FSDP2 on 1 process, sharding parameters")


def test_an_engine_other_than_the_one_asked_for_is_named_with_the_fix():
    ddp = Engine("ddp", world_size=2, machines=1, mixed_precision="no")
    message = engine_mismatch("fsdp", ddp)
    assert message.startswith("accelerate launch asked for FSDP, but the model would be trained with DDP")
    assert "zero2.yaml or zero3.yaml" in message
    assert "pip install 'poly_epo_trl[deepspeed]'" in engine_mismatch("deepspeed", ddp)
    assert engine_mismatch(None, ddp) is None
    assert engine_mismatch("deepspeed", Engine("deepspeed", 2, 1, "no", zero_stage=2)) is None


def test_bf16_from_the_launcher_against_a_recipe_without_it_stops_at_the_door(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    with pytest.raises(SystemExit) as stop:
        main(["--config", RECIPE, "--dry_run", "true", "--output_dir", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mixed_precision=bf16" in err[0] and "--mixed_precision no" in err[0]


@pytest.mark.parametrize("launcher", ["no", "bf16"])
def test_a_launcher_and_recipe_that_agree_pass(monkeypatch, capsys, tmp_path, launcher):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", launcher)
    extra = ["--bf16", "true"] if launcher == "bf16" else []
    main(["--config", RECIPE, "--dry_run", "true", "--output_dir", str(tmp_path), *extra])
    assert "dry run ok" in capsys.readouterr().out


def test_a_checkpoint_that_reached_max_steps_is_a_finished_run(tmp_path):
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 40, "max_steps": 40}))
    assert finished_step(str(tmp_path), 40) == 40
    assert finished_step(str(tmp_path), -1) == 40  # the run's own total, for a recipe that counts epochs
    assert finished_step(str(tmp_path), 80) is None  # max_steps raised: the run goes on


def test_fsdp_shards_without_a_config_say_how_to_merge_them(tmp_path):
    (tmp_path / "pytorch_model_fsdp_0").mkdir()
    with pytest.raises(RecipeError, match=r"accelerate merge-weights .*pytorch_model_fsdp_0 .*merged"):
        resolve_model(str(tmp_path))


def test_a_checkpoint_is_complete_only_once_every_process_has_written_its_random_generators(tmp_path):
    """Each process writes ``rng_state_<r>.pth`` after the save's last collective step, so the first process's
    ``trainer_state.json`` can be on disk before another's generators: a kill -9 then leaves a checkpoint whose
    resume would draw other samples on that process."""
    import torch

    from poly_epo_trl.trainer.resume import complete_checkpoints, save_resume_state

    folder = tmp_path / "checkpoint-2"
    for rank in (0, 1):
        save_resume_state({"step": 2}, str(folder), rank)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    torch.save({"cpu": torch.get_rng_state()}, folder / "rng_state_0.pth")
    assert complete_checkpoints(str(tmp_path), 2) == ([], [(str(folder), "rng_state_1.pth is missing")])
    torch.save({"cpu": torch.get_rng_state()}, folder / "rng_state_1.pth")
    whole = (folder / "rng_state_1.pth").read_bytes()
    (folder / "rng_state_1.pth").write_bytes(whole[: len(whole) // 2])  # killed mid-write
    assert complete_checkpoints(str(tmp_path), 2) == ([], [(str(folder), "rng_state_1.pth is cut short")])
    (folder / "rng_state_1.pth").write_bytes(whole)
    assert complete_checkpoints(str(tmp_path), 2) == ([str(folder)], [])
    for rank in (0, 1):  # save_only_model: no generators saved by any process, nothing to wait for
        (folder / f"rng_state_{rank}.pth").unlink()
    assert complete_checkpoints(str(tmp_path), 2) == ([str(folder)], [])
