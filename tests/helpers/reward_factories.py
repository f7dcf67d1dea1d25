"""Rewards a recipe gives arguments to (reward_kwargs): a reward function with a keyword, and a factory."""


def scaled_length(completions, scale: float = 1.0, **kwargs) -> list[float]:
    return [scale * len(c) for c in completions]


def make_threshold(at: int):
    """A factory, as open-r1's get_cosine_scaled_reward: no completions of its own; it returns the reward."""

    def reward(completions, **kwargs) -> list[float]:
        return [float(len(c) >= at) for c in completions]

    reward.__name__ = f"at_least_{at}"
    return reward


def solution_length(completions, solution, **kwargs) -> list[float]:
    """Reads the table's `solution` column (open-r1's math rows have one)."""
    return [float(len(c) == len(s)) for c, s in zip(completions, solution, strict=True)]
