"""Tensor parallelism: a column-then-row MLP and attention split by heads, on a "model" axis."""
