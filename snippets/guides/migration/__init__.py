"""Migrating from older JAX and Flax code: old spellings next to today's, both run."""
