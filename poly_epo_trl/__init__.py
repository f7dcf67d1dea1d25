"""Poly-EPO for TRL."""
