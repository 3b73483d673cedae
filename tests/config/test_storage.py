"""Config's speed devices of the shell (config.storage): the collector paused while a request
builds objects it keeps (docs/DESIGN.md, "Storage, concurrency and scale": at the request
boundary, never inside the pure core). No database."""

from __future__ import annotations

import gc

from config.storage import gc_paused


def test_it_pauses_the_collector_only_inside_the_block_and_nests():
    """The pause is undone when the block ends (also on error), and an inner block never
    resumes collection inside an outer one."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with gc_paused():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()
