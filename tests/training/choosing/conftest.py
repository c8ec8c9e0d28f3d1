import pytest

from snippets.training.choosing import costs


@pytest.fixture(scope="package")
def runs():
    """Every strategy placed, compiled, measured and trained once for the package."""
    return costs.run_all()
