"""Fixtures for the collectives page's tests."""

import pytest
import rich
from rich.console import Console


@pytest.fixture
def coloured_tables(monkeypatch):
    """Make rich.print (and so show_per_device) print ANSI truecolour, as a terminal does."""
    console = Console(force_terminal=True, color_system="truecolor")
    monkeypatch.setattr(rich, "_console", console)
