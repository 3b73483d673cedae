"""Settings for benchmark runs: the project's settings, plus the bench-only URLconf (the
trivial `/bench/ping` ceiling) and the `companion` log lines written to a file under
bench/results/ instead of the console (so the table stays readable; the lines are still
formatted and written, as in production)."""

import os

from config.settings import *  # noqa: F403
from config.settings import BASE_DIR, LOGGING

ROOT_URLCONF = "bench.urls"

_LOG_DIR = BASE_DIR / "bench" / "results"
_LOG_DIR.mkdir(parents=True, exist_ok=True)
LOGGING = {
    **LOGGING,
    "handlers": {
        "console": {
            "class": "logging.FileHandler",
            "filename": str(_LOG_DIR / os.environ.get("BENCH_LOG_NAME", "server.log")),
            "formatter": "plain",
            "filters": ["request_id"],
        }
    },
}
