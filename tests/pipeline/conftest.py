import pytest

from snippets.pipeline import stages


@pytest.fixture(scope="package")
def model():
    """The page's eight stages, input and sequential output, built once for the package."""
    return stages.build_model()
