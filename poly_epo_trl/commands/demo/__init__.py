"""The CPU demo: a toy task where GRPO collapses onto few answers and Poly-EPO keeps many."""
