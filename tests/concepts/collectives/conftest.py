"""Fixtures for the collectives page's tests: the shared meshes come from tests/conftest.py."""
