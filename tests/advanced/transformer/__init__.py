"""Tests of the transformer page: docs/advanced/transformer.md."""
