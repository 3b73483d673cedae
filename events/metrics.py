"""The worker's metrics (README, operations): served by `events_worker` on
`EVENTS_WORKER_METRICS_PORT` in Prometheus' text format."""

from prometheus_client import Counter, Gauge, Histogram

ATTEMPTS = Counter(
    "companion_webhook_attempts_total",
    "Webhook delivery attempts, by outcome (delivered, failed, gone, refused).",
    ["outcome"],
)
ATTEMPT_SECONDS = Histogram(
    "companion_webhook_attempt_seconds",
    "Latency of webhook delivery attempts.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
PENDING = Gauge(
    "companion_webhook_pending_deliveries", "Deliveries not yet delivered (of enabled endpoints)."
)
DISABLED = Gauge("companion_webhook_disabled_endpoints", "Endpoints disabled (410 or give-up).")
DISPATCHED = Counter(
    "companion_events_dispatched_total",
    "Events the worker read from the feed and turned into deliveries.",
)
