import pytest


@pytest.fixture
def in_process_wsgi():
    """Requests go straight into the WSGI app; as Django's own test client does, keep the end
    of a request from closing the test's database connection (its transaction holds the
    test's data)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)
