import pytest

from tests.memory.api import calls


@pytest.fixture
def lagging(api, sam):
    """Sam's records whose stored status lags their state (tests.memory.api.calls.lagging)."""
    return calls.lagging(api)
