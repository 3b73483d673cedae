"""Run a function from several real threads at once, each on its own database connection,
released together by a barrier (DESIGN: concurrency is proven, not argued)."""

import threading

from django.db import close_old_connections, connection


def run_concurrently(fn, n: int, *, timeout: float = 60.0) -> list:
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[index] = ("ok", fn(index))
        except BaseException as exc:  # reported to the test, never swallowed
            results[index] = ("error", exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a worker thread hung"
    close_old_connections()
    return results
