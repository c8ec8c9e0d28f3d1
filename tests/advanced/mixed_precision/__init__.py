"""Tests of the mixed precision page: docs/advanced/mixed-precision.md."""
