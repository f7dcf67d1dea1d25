"""The code reward's settings, as a recipe gives them (``poly-epo train`` and ``poly-epo eval`` alike): its sandbox,
trust mode and limits, each checked once against the values the reward takes."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..recipe import RecipeError
from .code import TRUST_MODES, CodeReward
from .sandbox import ISOLATION_MODES, SandboxLimits


@dataclass
class CodeRewardSettings:
    """The ``code`` reward's settings. A dataclass mixed into the recipe's arguments; the owner calls
    ``check_code_reward_settings()`` from its ``__post_init__``."""

    code_sandbox: str = field(
        default="bwrap",
        metadata={
            "help": f"Code reward isolation, one of {list(ISOLATION_MODES)}: 'bwrap' (bubblewrap namespaces, "
            "read-only minimal filesystem, no network) or 'rlimits' (weaker: resource limits only, for machines where "
            "bubblewrap cannot run)."
        },
    )
    code_trust_mode: str = field(
        default="strict",
        metadata={
            "help": f"One of {list(TRUST_MODES)}. 'strict': a test whose assertions do not reduce to call + constant "
            "scores 0; 'sandbox_asserts': run such tests inside the sandbox and take its word (forgeable)."
        },
    )
    code_timeout_seconds: float = field(default=10.0, metadata={"help": "Wall-clock limit per program."})
    code_memory_mb: int = field(default=1024, metadata={"help": "Memory limit per program (whole program)."})

    def check_code_reward_settings(self) -> None:
        """RecipeError naming the field, the value and the choices."""
        for name, allowed in (("code_sandbox", ISOLATION_MODES), ("code_trust_mode", TRUST_MODES)):
            if getattr(self, name) not in allowed:
                raise RecipeError(f"{name}={getattr(self, name)!r}: use one of {list(allowed)}.")
        for name in ("code_timeout_seconds", "code_memory_mb"):
            if not getattr(self, name) > 0:
                raise RecipeError(f"{name}={getattr(self, name)!r}: must be positive.")

    def code_reward(self) -> CodeReward:
        """The code reward these settings describe."""
        limits = SandboxLimits(timeout_seconds=self.code_timeout_seconds, memory_mb=self.code_memory_mb)
        return CodeReward(limits, isolation=self.code_sandbox, trust_mode=self.code_trust_mode)
