import pytest

from snippets.training.pipeline import stages


@pytest.fixture(scope="package")
def model():
    """The page's eight stages, input and sequential output, built once for the package."""
    return stages.build_model()
