"""Settings, all from the environment (django-environ). `.env.example` lists every variable.

The embedded default is a SQLite file next to manage.py, tuned (WAL, IMMEDIATE transactions,
a busy timeout) so a handful of concurrent requests never fail with "database is locked".
`DJANGO_ENV=production` switches on the hardened settings.
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.pooler import POOLERS, behind_pgbouncer

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
DJANGO_ENV = env.str("DJANGO_ENV", default="development")
PRODUCTION = DJANGO_ENV == "production"

if DEBUG or not PRODUCTION:
    SECRET_KEY = env.str("SECRET_KEY", default="insecure-development-key-change-me-" + "x" * 20)
else:
    SECRET_KEY = env.str("SECRET_KEY")  # required: no default in production

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # WhiteNoise serves static files in every mode; this keeps `runserver` from serving them
    # its own way (only with DEBUG on), so development and production serve them alike.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "django_tasks",
    "django_tasks_db",
    "config",
    "events",
    "memory",
    "policy",
    "conversations",
    # Before support: its post_migrate gives the Support group permissions of this app too.
    "agents",
    "support",
    "turns",
]

MIDDLEWARE = [
    # First: a request id on every response, unhandled exceptions logged once, metrics (§12).
    "config.observability.ObservabilityMiddleware",
    # Each request sees catalog data (key registry, capabilities, defaults, characters) as of
    # one catalog version: cached per process, checked once per request (config.catalog).
    "config.catalog.CatalogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (the pages' stylesheet, the admin's) before anything else reads the request.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "memory.middleware.UserTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # An oversized API body is refused before a view reads it, and its 413 passes back through
    # every middleware above, so it carries the headers of every other problem.
    "config.middleware.ApiBodyLimitMiddleware",
    # A path parameter that its schema refuses (C7) answers before any view queries with it.
    "config.middleware.ApiPathParameterMiddleware",
    # Last, as django-axes asks: locks out repeated failed sign-ins.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# Login brute-force protection (django-axes): a username + address pair is locked for an hour
# after five failures.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=1.0)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The failure counts live in the shared cache (SPEC §12 O4), so every worker and machine sees
# the same count.
# While the shared cache is unavailable, the counts go to the database instead (SPEC §12 O6:
# never no limit), see config.lockout.
AXES_HANDLER = "config.lockout.LockoutHandler"
AXES_CACHE = "default"

# Content-Security-Policy (django-csp): only this origin's scripts; no inline scripts.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# The shared cache (SPEC §12 O4): sign-in lockout and API throttle counters. Django's database
# cache by default (its table is created by `migrate`, see config.apps); Redis through Django's
# own RedisCache when CACHE_URL=redis://… (several machines). A per-process cache
# (locmemcache://) is for tests only: a system check warns when production runs on one.
CACHES = {"default": env.cache_url("CACHE_URL", default="dbcache://companion_cache")}
if CACHES["default"]["BACKEND"].endswith("DatabaseCache"):
    # Throttle and lockout entries of every token and sign-in; the default 300 would cull them.
    CACHES["default"].setdefault("OPTIONS", {}).setdefault("MAX_ENTRIES", 100_000)
elif str(CACHES["default"].get("LOCATION", "")).startswith(("redis://", "rediss://", "unix://")):
    # Django's RedisCache with timeouts on every call and a circuit breaker (SPEC §12 O6,
    # config.cache): a slow or absent Redis fails no request and holds none past 0.1 s.
    CACHES["default"]["BACKEND"] = "config.cache.ResilientRedisCache"
    CACHES["default"].setdefault("OPTIONS", {}).update(
        {
            "socket_connect_timeout": env.float("CACHE_CONNECT_TIMEOUT", default=0.1),
            "socket_timeout": env.float("CACHE_SOCKET_TIMEOUT", default=0.1),
            "breaker_seconds": env.float("CACHE_BREAKER_SECONDS", default=5.0),
        }
    )

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memory.context_processors.memory_switches",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"].setdefault("TEST", {})["NAME"] = env.str("SQLITE_TEST_NAME", default="")
else:
    # Persistent connections (a new PostgreSQL connection costs more than most requests), checked
    # before reuse so a connection the server dropped is replaced instead of failing a request.
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=True)
    # SPEC §12 O6: a database that does not answer a connection attempt fails it within
    # DB_CONNECT_TIMEOUT seconds (libpq's minimum is 2), and a connection whose sent data goes
    # unacknowledged for DB_TCP_USER_TIMEOUT_MS is dropped, both answered 503 (config.outage).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "connect_timeout": env.int("DB_CONNECT_TIMEOUT", default=3),
            "tcp_user_timeout": env.int("DB_TCP_USER_TIMEOUT_MS", default=10_000),
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        }
    )

# Many app servers reach PostgreSQL through PgBouncer in transaction pooling: DATABASE_POOLER=
# pgbouncer turns off what would outlive a transaction on a server backend — server-side
# cursors and prepared statements (config.pooler; docs/DECISIONS.md says what else was checked).
DATABASE_POOLER = env.str("DATABASE_POOLER", default="")
if DATABASE_POOLER not in POOLERS:
    raise ImproperlyConfigured(f"DATABASE_POOLER must be one of {', '.join(map(repr, POOLERS))}")
if DATABASE_POOLER == "pgbouncer":
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        raise ImproperlyConfigured("DATABASE_POOLER=pgbouncer needs a PostgreSQL DATABASE_URL")
    behind_pgbouncer(DATABASES["default"])

# SPEC §12 O5: the seconds a client is told to wait (Retry-After) when the database is down.
DATABASE_RETRY_AFTER = env.int("DATABASE_RETRY_AFTER", default=2)

# API tokens (config.credentials): a valid token is remembered by each process this long, so a
# revoked one is refused everywhere within these seconds; `last_used_at` is written at most
# once per API_TOKEN_LAST_USED_SECONDS. 0 switches either off.
API_TOKEN_CACHE_SECONDS = env.float("API_TOKEN_CACHE_SECONDS", default=5.0)
API_TOKEN_LAST_USED_SECONDS = env.float("API_TOKEN_LAST_USED_SECONDS", default=300.0)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# The admin writes dates as the pages do ("1 Dec 2026, 19:21"): config/formats/en/formats.py.
FORMAT_MODULE_PATH = ["config.formats"]

# Static files: WhiteNoise serves them from STATIC_ROOT in every mode (`runserver` with DEBUG on
# or off, gunicorn), with content-hashed names cached for a year and gzip-compressed copies.
# `manage.py collectstatic` fills STATIC_ROOT: `make run` and the deploy steps run it. With
# DEBUG on, WhiteNoise also finds files in place, so editing a stylesheet needs no collectstatic;
# with DEBUG off, a file that was never collected is served from its app folder, unhashed.
STATIC_URL = "/static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "config.static.StaticFilesStorage"},
}
# A file that was never collected is served from its app folder (see config/static.py).
WHITENOISE_USE_FINDERS = True
# Files a browser asks for at the site's root (`/favicon.ico`), served as they are.
WHITENOISE_ROOT = BASE_DIR / "public"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "memory:list"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["config.api.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["config.api.IsRuntime"],
    "DEFAULT_RENDERER_CLASSES": ["config.api.SafeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.api.SafeJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "config.schema.OperationSchema",
    "EXCEPTION_HANDLER": "config.api.problem_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "config.api.Pagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
    # Throttles (config.throttle, SPEC §12 O7): each operation's scope rate counts per end
    # user the request acts for; `token` is the much higher guard per runtime token, which
    # also counts the requests that act for no user. Sized for one runtime serving thousands
    # of users; counted in process and shared in batches through the shared cache.
    "DEFAULT_THROTTLE_CLASSES": ["config.throttle.RuntimeThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "runtime": env.str("THROTTLE_RUNTIME", default="60000/min"),
        "import": env.str("THROTTLE_IMPORT", default="60/hour"),
        "token": env.str("THROTTLE_TOKEN", default="1000000/min"),
        # SPEC §15 M2: each MCP connection's own bucket, beside its user's `runtime` one and
        # far below it, so a runaway assistant is throttled before the user's companion is.
        "connection": env.str("THROTTLE_CONNECTION", default="600/min"),
    },
}

# How often (seconds) each process sends its throttle counts to the shared cache.
THROTTLE_FLUSH_SECONDS = env.float("THROTTLE_FLUSH_SECONDS", default=1.0)

SPECTACULAR_SETTINGS = {
    "TITLE": "Companion Memory API",
    "DESCRIPTION": (
        "Memory resolution, boundary decisions, turns and prompt plans for a companion chat "
        "runtime.\n\nThis API is for the chat runtime's token, which acts for every user. An "
        "assistant acting for one person connects over the Model Context Protocol at `/mcp` "
        "with that person's connection token instead (this API refuses those tokens): see "
        "[Connect an assistant](/docs/connect-an-assistant), the README's section of that "
        "name."
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # SPEC V5: the webhooks a runtime receives, one per event type, in the document's
    # `webhooks` section (OpenAPI 3.1), with their signature headers (events.schemas).
    "WEBHOOKS": "events.schemas.WEBHOOKS",
    # SPEC C1, C3: path parameter patterns and every operation's problems (config.schema).
    "POSTPROCESSING_HOOKS": [
        "config.schema.nullable_enums",  # OpenAPI 3.1: a nullable enum keeps its null
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.schema.postprocess",
        "events.schemas.postprocess",  # SPEC V5: the webhooks' signature headers
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemoryStatusEnum": "memory.domain.STATUSES",
        "MemoryStateEnum": "memory.domain.STATES",  # SPEC E1
        "MemoryStateRuleEnum": [(r, r) for r in ("R2", "R3", "R4", "R5", "R6")],
        "TurnStatusEnum": [("open", "open"), ("replied", "replied")],
        "MemoryScopeKindEnum": "conversations.scopes.SCOPE_KINDS",
        # C5: a tombstone's scope kinds, a memory scope's and `everywhere`.
        "TombstoneScopeKindEnum": "memory.serializers.TOMBSTONE_SCOPE_KINDS",
        "PlanExclusionKindEnum": [("memory", "memory"), ("message", "message")],
        "EffectEnum": "policy.domain.EFFECTS",
        "DecisionReasonEnum": "policy.domain.DECISION_REASONS",
        "ExplainReasonEnum": "policy.domain.EXPLAIN_REASONS",
        "ProblemCodeEnum": "config.problems.CODE_CHOICES",
        # C1: each member of a scope's `oneOf` names its one kind.
        "ScopeKindUserEnum": [("user", "user")],
        "ScopeKindGlobalEnum": [("global", "global")],
        "ScopeKindCharacterEnum": [("character", "character")],
        "ScopeKindConversationEnum": [("conversation", "conversation")],
        "ScopeKindSceneEnum": [("scene", "scene")],
    },
}

# Domain settings (SPEC §5, §7).
COMPANION = {
    "CERTAINTY_LIKELY": env.float("CERTAINTY_LIKELY", default=0.85),
    "CERTAINTY_UNCERTAIN": env.float("CERTAINTY_UNCERTAIN", default=0.5),
    "MESSAGE_MAX_CHARS": env.int("MESSAGE_MAX_CHARS", default=100_000),
    "DEFAULT_MEMORY_SHARE": 0.3,
}

# S1: how long a support reveal of one user's private text lasts (extending it starts the time
# again), in seconds.
SUPPORT_REVEAL_SECONDS = env.int("SUPPORT_REVEAL_SECONDS", default=15 * 60)

DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2 * 1024 * 1024)
# A user's export file can be larger than any other request.
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=64 * 1024 * 1024)

# SPEC §14: the event feed and webhooks. Events are kept EVENTS_RETENTION_DAYS (V2); the
# worker (`manage.py events_worker`) delivers them to the endpoints staff registered (V3).
EVENTS_RETENTION_DAYS = env.int("EVENTS_RETENTION_DAYS", default=7)
# V3: each POST gives up after this many seconds; a failed delivery is tried again after the
# first delay, doubled each time up to the last, for the give-up window, then the endpoint is
# disabled.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
WEBHOOK_BACKOFF_FIRST_SECONDS = env.float("WEBHOOK_BACKOFF_FIRST_SECONDS", default=5.0)
WEBHOOK_BACKOFF_MAX_SECONDS = env.float("WEBHOOK_BACKOFF_MAX_SECONDS", default=3600.0)
WEBHOOK_GIVE_UP_SECONDS = env.float("WEBHOOK_GIVE_UP_SECONDS", default=24 * 3600.0)
# A worker holds a lane (one endpoint, one user) for the timeout and this margin: a worker
# killed mid-delivery leaves its lane to the next worker after that long.
WEBHOOK_LEASE_MARGIN_SECONDS = env.float("WEBHOOK_LEASE_MARGIN_SECONDS", default=30.0)
# V3 (SSRF): endpoints must be https and resolve to public addresses unless these allow more
# (a development receiver on this machine; the tests' receivers on loopback).
WEBHOOK_ALLOW_HTTP = env.bool("WEBHOOK_ALLOW_HTTP", default=False)
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env.bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", default=False)
# The worker: how often it reads the feed for new events (seconds), how many deliveries it
# runs at once (a slow lane — one endpoint, one user — holds one of them), and the port of its
# metrics (0: none).
EVENTS_WORKER_INTERVAL = env.float("EVENTS_WORKER_INTERVAL", default=1.0)
EVENTS_WORKER_THREADS = env.int("EVENTS_WORKER_THREADS", default=4)
# V3: at most this many lanes of one endpoint are sent at once (across all workers), so an
# endpoint that hangs for many users leaves the other endpoints a thread: by default all the
# worker's threads but one.
WEBHOOK_LANES_PER_ENDPOINT = env.int(
    "WEBHOOK_LANES_PER_ENDPOINT", default=max(1, EVENTS_WORKER_THREADS - 1)
)
EVENTS_WORKER_METRICS_PORT = env.int("EVENTS_WORKER_METRICS_PORT", default=0)
# How often the worker prunes events past their retention (seconds).
EVENTS_PRUNE_INTERVAL = env.float("EVENTS_PRUNE_INTERVAL", default=3600.0)
# Django's tasks API (the django-tasks backport) on its database backend: the webhook
# deliveries' queue, in this database, run by the events worker.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["webhooks"]}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every line carries the request id (SPEC §12 O1): `-` outside a request.
    "filters": {"request_id": {"()": "config.observability.RequestIdFilter"}},
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s request_id=%(request_id)s %(message)s"
        }
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id"],
        }
    },
    "loggers": {
        "companion": {
            "handlers": ["console"],
            "level": env.str("COMPANION_LOG_LEVEL", default="INFO"),
        },
    },
}

if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    # The load balancer probes health and readiness over plain HTTP inside the network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"
