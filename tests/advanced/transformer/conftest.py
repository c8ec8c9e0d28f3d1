"""The transformer page's mesh, state, compiled step and runs, built once for its test modules.

Each fixture calls the snippet function the page calls, in the page's order, and keeps what
it printed. A fixture that would donate a state others read starts from a fresh `init()`.
"""

import pytest

from snippets.advanced.transformer import explicit, init, memory, step
from tests.advanced.transformer.printed import quietly


@pytest.fixture(scope="package")
def mesh(devices):
    return quietly(init.the_mesh)[0]


@pytest.fixture(scope="package")
def made(mesh):
    """((cfg, sharded, state), printed table)."""
    return quietly(init.make_state, mesh)


@pytest.fixture(scope="package")
def cfg(made):
    return made[0][0]


@pytest.fixture(scope="package")
def sharded(made):
    return made[0][1]


@pytest.fixture(scope="package")
def state(made):
    """The initial state from `make_state`; no test donates it."""
    return made[0][2]


@pytest.fixture(scope="package")
def compiled_step(cfg, sharded, mesh):
    """(batches, tokens_spec, compiled step)."""
    return quietly(step.compile_step, cfg, sharded, mesh)[0]


@pytest.fixture(scope="package")
def batches(compiled_step):
    return compiled_step[0]


@pytest.fixture(scope="package")
def one_device(cfg, sharded, compiled_step):
    """((losses on 8 devices, losses on one), printed table)."""
    _, _, compiled = compiled_step
    return quietly(step.one_device_comparison, cfg, sharded, compiled, compiled_step[0])


@pytest.fixture(scope="package")
def accumulated(sharded, mesh, batches):
    """(((loss, grads), (loss_2, grads_2)), printed)."""
    return quietly(step.accumulation, sharded, mesh, batches)


@pytest.fixture(scope="package")
def memory_run(cfg, mesh, compiled_step):
    """((table, the lowered step without remat), printed)."""
    _, tokens_spec, compiled = compiled_step
    return quietly(memory.memory_table, cfg, mesh, compiled, tokens_spec)


@pytest.fixture(scope="package")
def explicit_run(cfg, sharded, batches, one_device):
    """((explicit mesh, its losses), printed)."""
    losses = one_device[0][0]
    return quietly(explicit.explicit_run, cfg, sharded, batches, losses)
