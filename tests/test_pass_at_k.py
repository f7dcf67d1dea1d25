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


def pkpo_binary_credits(correct: list[bool], k: int) -> list[float]:
    """PKPO's advantages for 0/1 rewards (Walder and Karkhanis 2025, arXiv 2505.15201, Theorem 2), written from the
    paper: a correct sample's credit is k/n, an incorrect one's (k/n) rho(n - 1, c, k - 1), with rho(n, c, k) =
    1 - C(n - c, k) / C(n, k) the pass@k of c correct among n; the credits then centred on their group mean."""
    from math import comb

    n, c = len(correct), sum(correct)

    def rho(total: int, good: int, draws: int) -> float:
        return 1.0 - comb(total - good, draws) / comb(total, draws) if draws else 0.0

    credits = [k / n if ok else (k / n) * rho(n - 1, c, k - 1) for ok in correct]
    mean = sum(credits) / n
    return [credit - mean for credit in credits]


def test_pkpo_published_credits_are_n_over_N_times_the_pass_at_n_set_advantage():
    """PKPO's published binary credits (n = 4, c = 2, k = 2 gives +-1/12) equal k/N times the marginal set advantage
    of the pass_at_n objective (+-1/6 x 1/2), and so do its credits for every 0/1 group up to 8 rollouts and every
    set size: an outside number nobody here wrote, pinned."""
    import itertools

    published = pkpo_binary_credits([True, True, False, False], 2)
    assert published == pytest.approx([1 / 12, 1 / 12, -1 / 12, -1 / 12])
    for size in range(2, 9):
        for correct in itertools.product([False, True], repeat=size):
            rewards = torch.tensor([list(map(float, correct))])
            clusters = torch.arange(size).unsqueeze(0)
            for k in range(1, size + 1):
                ours = marginal_set_advantages(rewards, clusters, k, objective="pass_at_n")[0] * k / size
                assert ours.tolist() == pytest.approx(pkpo_binary_credits(list(correct), k), abs=1e-6), (correct, k)
