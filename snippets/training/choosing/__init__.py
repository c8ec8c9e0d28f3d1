"""Choosing a strategy: every strategy on one model, measured side by side."""
