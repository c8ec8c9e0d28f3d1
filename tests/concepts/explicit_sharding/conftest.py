"""The page's Explicit mesh, its (8, 4) input, and a recorder for compiled programs."""

import pytest

from snippets.concepts.explicit_sharding import sharding_in_types


@pytest.fixture(scope="module")
def explicit_mesh():
    return sharding_in_types.build_mesh()


@pytest.fixture
def x(explicit_mesh):
    return sharding_in_types.types_outside_jit(explicit_mesh)[0]


@pytest.fixture
def compiled(monkeypatch):
    """Every program handed to `print_collectives` on the page, in order."""
    from snippets.concepts.explicit_sharding import mixing_axes, propagation_rules

    programs = []
    real = propagation_rules.print_collectives

    def record(program):
        programs.append(program)
        real(program)

    for module in (propagation_rules, mixing_axes):
        monkeypatch.setattr(module, "print_collectives", record)
    return programs
