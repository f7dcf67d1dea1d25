"""Pass@k Training (Chen et al. 2025, arXiv 2508.10751) is `set_objective: pass_at_n`: its analytic advantage is the
marginal set advantage of f(G) = max reward, divided by the standard deviation of the set rewards."""

import pytest
import torch
from pass_at_k_reference import chen_et_al

from poly_epo_trl import marginal_set_advantages
from poly_epo_trl.commands.train import main


def varied(correct: torch.Tensor, k: int) -> torch.Tensor:
    """The groups whose sets of k differ in reward (some succeed, some fail), where the paper's sigma is not 0."""
    return (correct.sum(1) > 0) & ((1 - correct).sum(1) >= k)


def divided_by_set_std(advantages: torch.Tensor, set_means: torch.Tensor) -> torch.Tensor:
    """Our marginal set advantages over the std of the set rewards, which for 0/1 rewards is sqrt(R (1 - R))."""
    return advantages / (set_means * (1 - set_means)).sqrt().unsqueeze(1)


@pytest.mark.parametrize("seed", range(5))
def test_pass_at_n_advantages_are_chen_et_als_analytic_form_after_its_normalisation(seed):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(40):
        n = int(torch.randint(2, 17, (1,), generator=generator))
        k = int(torch.randint(1, n, (1,), generator=generator))
        correct = (torch.rand(64, n, generator=generator) < torch.rand(64, 1, generator=generator)).double()
        labels = torch.randint(0, 5, correct.shape, generator=generator)  # pass@k reads no clusters
        ours, set_means = marginal_set_advantages(correct, labels, k, objective="pass_at_n", return_baseline=True)
        defined = varied(correct, k)
        torch.testing.assert_close(
            divided_by_set_std(ours[defined], set_means[defined]),
            chen_et_al(correct[defined], k),
            rtol=1e-12,
            atol=1e-12,
        )
        assert (
            ours[~defined].abs() < 1e-12
        ).all()  # every set alike (all fail, or each holds a success): nothing to learn


def test_the_pass_at_k_recipe_trains_on_cpu_with_the_papers_advantages(tmp_path):
    argv = ["--config", "recipes/tiny/pass_at_k/config_cpu.yaml", "--max_steps", "2", "--logging_steps", "1"]
    trainer = main([*argv, "--output_dir", str(tmp_path)])
    assert trainer.settings.set_objective == "pass_at_n" and trainer.state.global_step == 2
    batch = trainer.last_set_batch
    k = trainer.settings.set_size
    mixed = varied(batch.rewards, k)
    assert mixed.sum() >= 1 and set(batch.rewards.unique().tolist()) <= {0.0, 1.0}
    _, set_means = marginal_set_advantages(batch.rewards, batch.cluster_ids, k, "pass_at_n", return_baseline=True)
    ours = divided_by_set_std(batch.advantages[mixed], set_means[mixed])
    torch.testing.assert_close(ours, chen_et_al(batch.rewards[mixed], k).to(ours.dtype))  # to float32 precision
    assert (batch.advantages[~mixed].abs() < 1e-6).all()
