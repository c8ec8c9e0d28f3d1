"""The transformer page's state and compiled step, made as the mixed precision page makes
them, once for the package's test modules."""

from pathlib import Path

import pytest

from snippets.advanced.mixed_precision import contract
from snippets.advanced.transformer import step
from tests.advanced.transformer.printed import quietly

PAGE = Path(__file__).resolve().parents[3] / "docs" / "advanced" / "mixed-precision.md"


@pytest.fixture(scope="package")
def prose():
    return " ".join(PAGE.read_text(encoding="utf-8").split())


@pytest.fixture(scope="package")
def made(devices):
    """(mesh, cfg, sharded, state): the initial state, which `stored` donates."""
    return contract.make_state()


@pytest.fixture(scope="package")
def compiled_step(made):
    """(batches, tokens_spec, compiled step)."""
    mesh, cfg, sharded, _ = made
    return quietly(step.compile_step, cfg, sharded, mesh)[0]


@pytest.fixture(scope="package")
def stored(made, compiled_step):
    """((rows, state after one step, (loss, grads)), printed)."""
    mesh, _, sharded, state = made
    batches, _, compiled = compiled_step
    return quietly(contract.stored_and_sent, sharded, mesh, state, batches, compiled)


@pytest.fixture(scope="package")
def precise(made, compiled_step):
    """(the step compiled under default_matmul_precision("float32"), printed)."""
    mesh, _, sharded, _ = made
    _, tokens_spec, compiled = compiled_step
    return quietly(contract.matmul_precision, sharded, mesh, tokens_spec, compiled)
