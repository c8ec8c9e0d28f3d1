"""The page's Auto mesh and input, and a recorder for the programs `show` compiles."""

import pytest

from snippets.concepts.automatic_sharding import propagation


@pytest.fixture(scope="module")
def auto_mesh():
    return propagation.build_mesh()


@pytest.fixture
def x(auto_mesh):
    return propagation.place_input(auto_mesh)


@pytest.fixture
def compiled(monkeypatch):
    """Every program `show` compiles, in order; its table is still printed."""
    programs = []
    real = propagation.print_collectives

    def record(program):
        programs.append(program)
        real(program)

    monkeypatch.setattr(propagation, "print_collectives", record)
    return programs
