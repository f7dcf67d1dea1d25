"""Evaluation: pass@k, majority vote and strategy diversity."""
