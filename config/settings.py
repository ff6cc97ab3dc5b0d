"""Settings, read from the environment.

The engines are PostgreSQL and Redis in every process. With no environment at all they are the
embedded ones under DATA_DIR (config/embedded.py), so `make run` works on a bare machine;
`DATABASE_URL=postgres://...` and `REDIS_URL=redis://...` name servers of one's own instead.
Production sets `DJANGO_DEBUG=0` and must then provide a real `DJANGO_SECRET_KEY`.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config import embedded
from config.gm_seats import gm_seats_from_env

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", True)

_DEV_SECRET = "dev-only-insecure-key-never-used-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not DEBUG and (not SECRET_KEY or SECRET_KEY == _DEV_SECRET or len(SECRET_KEY) < 50):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be set to a long random value in production."
    )

# Keys the tamper-evident log (audit/chain.py). Keep it out of the database and its backups:
# whoever holds it can re-seal an edited log. Changing it makes every existing chain unverifiable.
_DEV_CHAIN_KEY = "dev-only-audit-chain-key-never-used-in-production"
AUDIT_CHAIN_KEY = os.environ.get("AUDIT_CHAIN_KEY") or (_DEV_CHAIN_KEY if DEBUG else "")
if not DEBUG and (len(AUDIT_CHAIN_KEY) < 32 or AUDIT_CHAIN_KEY in (_DEV_CHAIN_KEY, SECRET_KEY)):
    raise ImproperlyConfigured(
        "AUDIT_CHAIN_KEY must be set to a long random value (not the secret key) in production."
    )

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "guardian",
    "axes",
    "django_tasks",
    "django_tasks_db",
    "campaigns",
    "ai_tools",
    "audit",
    "gm",
    "web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The app serves its own assets (no CDN), in production too, where runserver does not.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Database or channel-layer outages in a view: 503 with Retry-After, never a 500.
    "web.middleware.ServiceUnavailableMiddleware",
    # Last, as django-axes requires: turns a locked-out sign-in into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "config.asgi.application"

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
            ],
        },
    },
]


def postgres_pool() -> dict[str, float]:
    """Django's psycopg pool, per process. Under ASGI every request runs in a thread of its own,
    so persistent connections (CONN_MAX_AGE > 0) are left behind by threads that end and pile up
    until PostgreSQL refuses clients. CONN_MAX_AGE=0 alone stops the pile-up but connects once
    per request and leaves a burst unbounded; the pool caps a process at DB_POOL_MAX_SIZE
    connections, reuses them, and makes a burst wait its turn — at most DB_POOL_TIMEOUT seconds,
    then the request answers 503 with Retry-After. A task worker holds a connection while a GM
    turn runs (and its heartbeat another), so size (ASGI processes + task workers) x max_size
    below the server's max_connections."""
    return {
        "min_size": int(os.environ.get("DB_POOL_MIN_SIZE", "2")),
        "max_size": int(os.environ.get("DB_POOL_MAX_SIZE", "10")),
        "timeout": float(os.environ.get("DB_POOL_TIMEOUT", "10")),
    }


# The engines: PostgreSQL and Redis, in every process. DATABASE_URL / REDIS_URL name servers
# of one's own (production, several machines); unset, the embedded ones under DATA_DIR are
# used, started on first need and shared by every process of that folder (config/embedded.py).
DATA_DIR = embedded.data_dir_from_env(BASE_DIR)
DATABASE_URL = os.environ.get("DATABASE_URL") or embedded.postgres_url(DATA_DIR)
REDIS_URL = os.environ.get("REDIS_URL") or embedded.redis_url(DATA_DIR)

# The pool needs CONN_MAX_AGE=0 (connections go back to it at the end of each request).
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must name a PostgreSQL database (postgres://...).")
# Django's backend but for its checkout, which checks each connection it hands out and, after a
# restart or a failover, replaces every dead one at once (config/postgresql): the first request
# after one is answered. CONN_HEALTH_CHECKS stays off, as it must there: with a pool it only
# sets psycopg_pool's own check, which sleeps 1, 2, 4 ... s between the dead connections of a
# restart and answered 503 for tens of seconds.
DATABASES["default"]["ENGINE"] = "config.postgresql"
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = postgres_pool()
# Parameters bound on the server, and each statement a connection runs a few times
# (psycopg's `prepare_threshold`) parsed and planned there once, as Django's documented
# `server_side_binding` option allows: the audited dispatch's ratio to a bare write, and the
# tables one host carries (docs/performance.md). A pooler in transaction mode must keep prepared
# statements (PgBouncer 1.21+, `max_prepared_statements`), or DB_SERVER_SIDE_BINDING=0.
if env_bool("DB_SERVER_SIDE_BINDING", True):
    DATABASES["default"]["OPTIONS"].setdefault("server_side_binding", True)
    DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The channel layer carries every realtime event from the process that commits it (a web
# server, a task worker running a GM turn) to the processes holding the websockets: Redis
# pub/sub, channels-redis's layer adapted (config/redis_layer.py).
# A group membership outlives the longest a socket may stay open: the app closes every socket
# after WEBSOCKET_TIMEOUT (config.asgi.closed_after, under uvicorn as under Daphne, whose own
# --websocket_timeout default is the same 24 h) and the page opens a new one, which joins again.
# A membership that lapsed first would silence an open socket.
WEBSOCKET_TIMEOUT = 86400
GROUP_EXPIRY = WEBSOCKET_TIMEOUT + 3600

# A feed waits on the process's one subscribed connection, whose reader polls it every 0.1 s,
# so a silent table meets no read timeout; the timeouts still bound a dead Redis: its readers
# and publishers fail, never hang.
REDIS_SOCKET_TIMEOUT = float(os.environ.get("REDIS_SOCKET_TIMEOUT", "10"))
REDIS_CONNECT_TIMEOUT = float(os.environ.get("REDIS_CONNECT_TIMEOUT", "5"))
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "config.redis_layer.RedisPubSubLayer",
        "CONFIG": {
            # Everything but `address` is handed to redis-py's connection pool.
            "hosts": [
                {
                    "address": REDIS_URL,
                    "socket_timeout": REDIS_SOCKET_TIMEOUT,
                    "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
                }
            ],
        },
    }
}

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username+address before any password is checked.
    "axes.backends.AxesBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
# No anonymous guardian user: anonymous requests never hold object permissions.
ANONYMOUS_USER_NAME = None

# Failed sign-ins (API token, sign-in page, admin) lock one username from one address: locking a
# username alone would let anyone lock a player out; locking an address alone would lock out a
# whole shared network. Attempts live in the database, so every process sees them.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("LOGIN_COOLOFF", "900")))
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "web.accounts.login_locked_out"
# The client address is REMOTE_ADDR only (a client can write X-Forwarded-For). Behind a reverse
# proxy, give uvicorn --proxy-headers --forwarded-allow-ips=<the proxy's address> in place of the
# Procfile's --no-proxy-headers, so REMOTE_ADDR is the client's address (docs/operations.md).
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)

# API tokens die this many seconds after they are issued; signing in again issues a new one.
TOKEN_TTL = int(os.environ.get("TOKEN_TTL", str(7 * 24 * 3600)))

# Two Redis caches, which every process shares: `default`, where the sign-up, dice and MCP rate
# limits count; `fragments`, the page's live fragments, drawn once per event for each class of
# viewer (web/pages/fragments.py). A key names its event number, so a copy is never stale.
CACHES = {
    alias: {
        "BACKEND": "core.redis_pool.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": alias if alias != "default" else "cache",
        # a request's cache object would otherwise connect anew (core/redis_pool.py)
        "OPTIONS": {"pool_class": "core.redis_pool.ProcessConnectionPool"},
    }
    for alias in ("default", "fragments")
}

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

STATIC_URL = "static/"
# Only for `collectstatic` (e.g. to put assets behind a reverse proxy); the app serves them itself.
STATIC_ROOT = os.environ.get("DJANGO_STATIC_ROOT") or None
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the finders, so a deployment without a collectstatic step still works.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/campaigns/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "web.accounts.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "signup": os.environ.get("SIGNUP_RATE", "10/hour"),
        "dice": os.environ.get("DICE_RATE", "60/minute"),
        # MCP requests per user (docs/mcp.md#limits): every tool call of an outside agent.
        "mcp": os.environ.get("MCP_RATE", "120/minute"),
    },
    # Throttles key on REMOTE_ADDR, never on a client-written X-Forwarded-For (see AXES above).
    "NUM_PROXIES": 0,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.StrictAutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Undoable AI Game Master API",
    "DESCRIPTION": (
        "Every write-capable AI tool call is logged before it mutates and is undoable.\n\n"
        'Every error is JSON `{"detail": ...}`. Request bodies are JSON objects: unknown fields '
        "are refused (400), a body of another media type is 415, and a method a path does not "
        "list is 405 with an `Allow` header naming the methods it has."
    ),
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.schema.document_unsupported_media_type",
    ],
    "ENUM_NAME_OVERRIDES": {
        "CampaignStatusEnum": "campaigns.models.Campaign.Status",
        "TurnStatusEnum": "web.api.serializers.TURN_STATUSES",
        "InvocationStatusEnum": "web.api.audit.serializers.INVOCATION_STATUSES",
        # A chat message's and an event's source, and a log row's origin: two fields named
        # `source`, each enum under a name of its own.
        "SourceEnum": "campaigns.models.Source",
        "InvocationOriginEnum": "audit.models.InvocationOrigin",
    },
}

# Which GM provider runs a turn where the campaign chose none: "scripted" (offline,
# deterministic), "anthropic", "openai", or a name from GM_PROVIDERS. By default the first
# configured of anthropic, openai, scripted.
GM_PROVIDER = os.environ.get(
    "GM_PROVIDER",
    "anthropic"
    if os.environ.get("ANTHROPIC_API_KEY")
    else "openai"
    if os.environ.get("OPENAI_MODEL")
    else "scripted",
)
ANTHROPIC_MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
# Another Messages API endpoint (a proxy, or the local fake the tests run); empty: Anthropic's.
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
ANTHROPIC_MAX_RETRIES = int(os.environ.get("ANTHROPIC_MAX_RETRIES", "2"))
ANTHROPIC_TIMEOUT = float(os.environ.get("ANTHROPIC_TIMEOUT", "60"))
# The OpenAI-compatible GM (GM_PROVIDER=openai): any Chat Completions server. OPENAI_BASE_URL
# empty means OpenAI itself; Ollama is http://127.0.0.1:11434/v1 (any OPENAI_API_KEY will do for
# a local server). OPENAI_STRICT_TOOLS: auto (strict function schemas for OpenAI itself only),
# on, off. OPENAI_TOOL_CHOICE: empty (not sent; Ollama ignores it), auto, required or none.
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_MODEL = os.environ.get("OPENAI_MODEL", "")
OPENAI_STRICT_TOOLS = os.environ.get("OPENAI_STRICT_TOOLS", "auto")
OPENAI_TOOL_CHOICE = os.environ.get("OPENAI_TOOL_CHOICE", "")
OPENAI_MAX_RETRIES = int(os.environ.get("OPENAI_MAX_RETRIES", "2"))
OPENAI_TIMEOUT = float(os.environ.get("OPENAI_TIMEOUT", "60"))
if OPENAI_STRICT_TOOLS not in ("auto", "on", "off"):
    raise ImproperlyConfigured("OPENAI_STRICT_TOOLS must be auto, on or off.")
if OPENAI_TOOL_CHOICE not in ("", "auto", "required", "none"):
    raise ImproperlyConfigured("OPENAI_TOOL_CHOICE must be empty, auto, required or none.")
# More OpenAI-compatible seats a campaign's owner may choose from, as JSON: {"name": {"model",
# "base_url", "api_key_env", "label", "strict", "tool_choice"}}, e.g. '{"ollama": {"model":
# "llama3.1", "base_url": "http://127.0.0.1:11434/v1"}, "gpt": {"model": "gpt-4.1",
# "api_key_env": "OPENAI_API_KEY"}}'. A key is named by the variable that holds it, read here
# and kept in memory only: never in the database, a page or a log.
GM_PROVIDERS = gm_seats_from_env(os.environ.get("GM_PROVIDERS", ""), os.environ)
# A worker running a GM turn holds a lease on it for this long and renews it (a heartbeat) every
# third of it; a worker that dies loses the lease, and the turn resumes on another worker (or
# fails, once GM_MAX_ATTEMPTS of its runs have died: resumes after an approval do not count)
# about this long after the last heartbeat.
GM_LEASE_SECONDS = float(os.environ.get("GM_LEASE_SECONDS", "60"))
GM_MAX_ATTEMPTS = int(os.environ.get("GM_MAX_ATTEMPTS", "3"))
if GM_LEASE_SECONDS < 1 or GM_MAX_ATTEMPTS < 1:
    raise ImproperlyConfigured("GM_LEASE_SECONDS and GM_MAX_ATTEMPTS must be at least 1.")
# How often (seconds) a running GM turn looks whether it was cancelled or undone; a stop hangs up
# the model's stream at once, so the turn ends this long after Stop at most (plus a read).
GM_STOP_POLL_SECONDS = float(os.environ.get("GM_STOP_POLL_SECONDS", "0.5"))
if not 0 < GM_STOP_POLL_SECONDS <= 1:
    raise ImproperlyConfigured("GM_STOP_POLL_SECONDS must be more than 0 and at most 1.")
# Seconds the scripted GM waits before each round, as a model would (benchmarks, process tests).
GM_SCRIPTED_DELAY = float(os.environ.get("GM_SCRIPTED_DELAY", "0"))
# Seconds it waits before each word of its narration, as a model streams (0: a sentence at once).
GM_SCRIPTED_WORD_DELAY = float(os.environ.get("GM_SCRIPTED_WORD_DELAY", "0"))

# Adaptive approval (audit/approval.py): under the `adaptive` policy, a (model, tool) pair whose
# last APPROVAL_ADAPTIVE_WINDOW calls that ran were undone at a rate of at least
# APPROVAL_ADAPTIVE_THRESHOLD needs approval whatever the tool's tier.
APPROVAL_ADAPTIVE_WINDOW = int(os.environ.get("APPROVAL_ADAPTIVE_WINDOW", "20"))
APPROVAL_ADAPTIVE_THRESHOLD = float(os.environ.get("APPROVAL_ADAPTIVE_THRESHOLD", "0.25"))
if APPROVAL_ADAPTIVE_WINDOW < 1 or not 0 < APPROVAL_ADAPTIVE_THRESHOLD <= 1:
    raise ImproperlyConfigured(
        "APPROVAL_ADAPTIVE_WINDOW must be at least 1 and APPROVAL_ADAPTIVE_THRESHOLD in (0, 1]."
    )
# How long (seconds) a tool call held for approval waits for a human before it expires: a job
# of the task engine, scheduled when the call pauses, expires it then (no page view needed).
APPROVAL_TIMEOUT = float(os.environ.get("APPROVAL_TIMEOUT", "3600"))
if APPROVAL_TIMEOUT <= 0:
    raise ImproperlyConfigured("APPROVAL_TIMEOUT must be a positive number of seconds.")
# An MCP client's calls join its latest open turn while it is active; after this many seconds
# without a call (or once the turn is undone) the next call opens a new turn (docs/mcp.md#turns).
MCP_TURN_IDLE = float(os.environ.get("MCP_TURN_IDLE", "900"))
if MCP_TURN_IDLE <= 0:
    raise ImproperlyConfigured("MCP_TURN_IDLE must be a positive number of seconds.")

# Background work (docs/architecture.md#background-work): GM turns run in worker processes
# (`manage.py task_worker`, the Procfile's `worker:`, up to `--threads` jobs at once each), which
# claim jobs from this database; any number of them, on any number of machines, against one
# PostgreSQL (a NOTIFY wakes them).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

# One handler, on the root logger: every record is printed once, by it. Django's own logging
# (applied before this) hangs a console handler on the `django` logger, whose records then also
# reach the root's: every request line and "Not Found" came out twice. Naming `django` here
# takes its handlers away and keeps its level, so its records reach the root's handler alone.
# Daphne's and the task worker's start-up lines ("Listening on …", "Starting worker …") are
# INFO: kept, so `make run` says where it serves and that the worker runs.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "daphne": {"handlers": [], "level": "INFO", "propagate": True},
    },
}

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
