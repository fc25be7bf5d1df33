"""Glassbox settings. Everything comes from the environment, with defaults that run the demo:
SQLite, the in-memory channel layer and the offline demo model."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from project.env import (
    approval_setting,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_json,
    env_list,
    env_str,
)
from project.otel import traces_protocol
from project.unused import (
    POSTGRES_FIELDS,
    SDK_PACKAGES,
    SDK_TRANSPORT,
    SDK_TYPES,
    defer_init,
    leave_out,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# The fallback key only suits the local demo; any real deployment sets SECRET_KEY, and
# `check --deploy` fails while it is this one (project.checks).
DEMO_SECRET_KEY = "glassbox-insecure-demo-key-set-SECRET_KEY-in-production"
SECRET_KEY = env_str("SECRET_KEY", DEMO_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "chat",
    "chat.servers",
    "activity",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A database outage is a 503 (JSON on the API), not a 500 page.
    "project.outages.DatabaseOutageMiddleware",
    "activity.middleware.UserLanguageMiddleware",
    "project.middleware.LoginRequiredForPagesMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last to act, as django-axes asks: it turns a lockout into its 429 page.
    "axes.middleware.AxesMiddleware",
    # Passes everything on; being sync only, innermost, it has Django run the whole chain in
    # one thread, entered once a request.
    "project.middleware.OneThreadHop",
]

# Login throttling (django-axes): a username is locked from the address that guessed wrong
# GLASSBOX_LOGIN_FAILURES times, for GLASSBOX_LOGIN_LOCKOUT_MINUTES; a success resets it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

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
                "django.template.context_processors.csp",
                "chat.pages.context.inbox",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A kept connection is checked before reuse, so a database restart is survived.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the page read history while a turn writes its feed.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    leave_out(POSTGRES_FIELDS)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
defer_init(*SDK_PACKAGES, *SDK_TYPES, SDK_TRANSPORT)

REDIS_URL = env_str("REDIS_URL", "")
# Messages a socket's channel holds before the layer drops more (clients recover from drops;
# see chat/turns/follow.py).
CHANNEL_CAPACITY = env_int("GLASSBOX_CHANNEL_CAPACITY", 100)
REDIS_MAX_CONNECTIONS = env_int("GLASSBOX_REDIS_MAX_CONNECTIONS", 1000)
# What keeps apart the sockets of deployments that share one Redis: groups are named after
# users and sessions, whose ids repeat from one database to the next.
CHANNEL_PREFIX = env_str("GLASSBOX_CHANNEL_PREFIX", "asgi")
# An open socket checks its right this often, besides being told when it is taken away and
# checking before each new turn: for a login that expires while the socket is idle.
GLASSBOX_SOCKET_RECHECK_SECONDS = env_float("GLASSBOX_SOCKET_RECHECK_SECONDS", 60.0)
# On the in-memory layer a right taken away by another process (a shell, `erase_user`) is told
# to nobody here: it is written down (chat.Revocation), and each serving process reads what
# was written this often, one statement a process whatever its sockets (chat.socket.relay).
# Redis carries it between processes instead; 0 turns the reading off.
GLASSBOX_REVOCATION_POLL_SECONDS = env_float(
    "GLASSBOX_REVOCATION_POLL_SECONDS", 0.0 if REDIS_URL else 1.0
)
if REDIS_URL:
    # Pub/sub: a group message is one PUBLISH, and each process routes it to its sockets. The
    # core layer (a Redis list per process, a Lua script per send) cost twice the CPU per turn
    # and seconds of delay at 100 turns (docs/deploy.md, "The channel layer").
    CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
        "default": {
            "BACKEND": "project.redis_layer.RedisPubSubChannelLayer",
            "CONFIG": {
                # redis-py 8 stops reading after 5 s by default; a longer read timeout still
                # catches a connection that died silently. Its pool's default cap of 100
                # connections fails hundreds of sockets and turns of one process.
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": 30,
                        "max_connections": REDIS_MAX_CONNECTIONS,
                    }
                ],
                "capacity": CHANNEL_CAPACITY,
                "prefix": CHANNEL_PREFIX,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "project.layers.SweptInMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:conversation_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
# Each user's choice (preferences page or the switcher), else the browser's Accept-Language.
LANGUAGES = [("en", "English"), ("it", "Italiano"), ("zh-hant", "繁體中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))

SESSION_COOKIE_HTTPONLY = True
SESSION_ENGINE = "project.sessions"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Behind a TLS-terminating proxy (see docs): redirect to HTTPS, HSTS, and trust its header.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
# Scripts only from this site (htmx comes from the installed django-htmx), with a nonce for
# anything inline; images only from this site, so a link the model writes cannot leak data.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "glassbox": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
        # Its INFO line for every request to the model (Daphne logs INFO at its default
        # verbosity) cost a turn more CPU than recording one of its events.
        "httpx2": {"level": "WARNING"},
    },
}

# The agent. With no OPENAI_API_KEY the offline demo model answers through the same client.
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
GLASSBOX_MODEL = env_str("GLASSBOX_MODEL", "gpt-4o-mini" if OPENAI_API_KEY else "glassbox-demo")
# Which API the model is asked through: Chat Completions, which every OpenAI-compatible
# server speaks, or the Responses API, which gives OpenAI's reasoning models' summaries,
# reasoning tokens and encrypted reasoning (docs/providers.md). The demo model speaks the first.
GLASSBOX_MODEL_API = env_choice(
    "GLASSBOX_MODEL_API", ("chat_completions", "responses"), "chat_completions"
)
# Over the Responses API, the reasoning summary a reasoning model is asked for, with its
# encrypted reasoning; "off" asks for neither (for models that take no reasoning options).
GLASSBOX_REASONING_SUMMARY = env_choice(
    "GLASSBOX_REASONING_SUMMARY", ("auto", "concise", "detailed", "off"), "auto"
)
GLASSBOX_CONNECT_TIMEOUT = env_float("GLASSBOX_CONNECT_TIMEOUT", 5.0)
GLASSBOX_READ_TIMEOUT = env_float("GLASSBOX_READ_TIMEOUT", 60.0)
GLASSBOX_TURN_TIMEOUT = env_float("GLASSBOX_TURN_TIMEOUT", 300.0)
# On SIGTERM, seconds to let running turns finish before the process stops.
GLASSBOX_DRAIN_SECONDS = env_float("GLASSBOX_DRAIN_SECONDS", 60.0)
# Retries of a failed request to the provider, only ever before the first streamed byte.
GLASSBOX_PROVIDER_RETRIES = env_int("GLASSBOX_PROVIDER_RETRIES", 2)
GLASSBOX_TOOL_TIMEOUT = env_float("GLASSBOX_TOOL_TIMEOUT", 20.0)
GLASSBOX_MAX_TOOL_ROUNDS = env_int("GLASSBOX_MAX_TOOL_ROUNDS", 4)
GLASSBOX_MAX_MESSAGE_CHARS = env_int("GLASSBOX_MAX_MESSAGE_CHARS", 8000)
# The prompts a new conversation offers to send with one click: a JSON list of strings (at
# most 6 are shown). Unset: the demo's, one for each path the agent can take.
GLASSBOX_STARTERS = env_json("GLASSBOX_STARTERS", "null")
# Days a deleted conversation stays available to admins before `purge_deleted` removes it.
GLASSBOX_RETENTION_DAYS = env_int("GLASSBOX_RETENTION_DAYS", 30)
AXES_FAILURE_LIMIT = env_int("GLASSBOX_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("GLASSBOX_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Per user: questions a minute, and answers running at once (across conversations).
GLASSBOX_TURNS_PER_MINUTE = env_int("GLASSBOX_TURNS_PER_MINUTE", 20)
GLASSBOX_MAX_CONCURRENT_TURNS = env_int("GLASSBOX_MAX_CONCURRENT_TURNS", 3)
# Seconds between the demo model's streamed chunks, so a person can watch it write.
GLASSBOX_DEMO_DELAY = env_float("GLASSBOX_DEMO_DELAY", 0.03)
# A running turn proves it is alive this often; one silent for HEARTBEAT * 4 is recovered
# as interrupted (its process died).
GLASSBOX_HEARTBEAT_SECONDS = env_float("GLASSBOX_HEARTBEAT_SECONDS", 2.0)
# What every running turn has shown (events, text) is written together this often, in one
# transaction: a crash loses at most this window of it (activity.writing.commits).
GLASSBOX_COMMIT_SECONDS = env_float("GLASSBOX_COMMIT_SECONDS", 0.1)
# Answer text is written at once past this many characters (else with the next commit).
GLASSBOX_TEXT_FLUSH_CHARS = env_int("GLASSBOX_TEXT_FLUSH_CHARS", 2000)
# Streamed text is coalesced into one frame per window, so the channel layer is never flooded.
GLASSBOX_TEXT_FRAME_SECONDS = env_float("GLASSBOX_TEXT_FRAME_SECONDS", 0.03)
# Under load the window widens (chat.turns.runner.frame_window), up to this: the frames a
# process sends a second stop growing with the answers it streams.
GLASSBOX_TEXT_FRAME_MAX_SECONDS = env_float("GLASSBOX_TEXT_FRAME_MAX_SECONDS", 0.25)
# The agent's tools, as dotted paths to chat.agent.tools.Tool objects (the pure ones in
# chat.agent.builtin_tools, those that touch the app in chat.tools); add your own here.
GLASSBOX_TOOLS = env_list(
    "GLASSBOX_TOOLS",
    ",".join(
        [
            "chat.tools.search.SEARCH_DOCUMENTS",
            "chat.agent.builtin_tools.CALCULATOR",
            "chat.agent.builtin_tools.CURRENT_DATETIME",
            "chat.tools.contact_form.REQUEST_CONTACT_FORM",
            "chat.tools.email.SEND_EMAIL",
            "chat.tools.plan.UPDATE_PLAN",
        ]
    ),
)
# MCP servers whose tools the agent may use, besides those added in the admin: a JSON list,
# or the path of a JSON file holding one (docs/mcp.md).
# Read, and checked at start-up, by chat.agent.mcp.config.declared_servers().
GLASSBOX_MCP_SERVERS = env_str("GLASSBOX_MCP_SERVERS", "")
# Seconds to open a session with an MCP server (and list its tools); a turn waits for a
# server's first attempt at most this long (only when its tools were never listed, or when it
# calls one of them), never for its retries.
GLASSBOX_MCP_CONNECT_TIMEOUT = env_float("GLASSBOX_MCP_CONNECT_TIMEOUT", 10.0)
# Per-user OAuth for MCP servers declared with "auth": "oauth". Tokens are stored encrypted
# with this Fernet key (`python -c "from cryptography.fernet import Fernet;
# print(Fernet.generate_key().decode())"`); only DEBUG and the demo fall back to a key made
# from SECRET_KEY (chat.servers.secrets).
GLASSBOX_TOKEN_KEY = env_str("GLASSBOX_TOKEN_KEY", "")
# Where the authorization server sends the user back: this site's connections callback.
GLASSBOX_OAUTH_REDIRECT_URL = env_str(
    "GLASSBOX_OAUTH_REDIRECT_URL", "http://localhost:8000/accounts/connections/callback/"
)
# An https URL serving this site's client metadata document (CIMD), if it has one: servers
# that accept such client IDs then need no registration.
GLASSBOX_OAUTH_CLIENT_METADATA_URL = env_str("GLASSBOX_OAUTH_CLIENT_METADATA_URL", "") or None
# Seconds a turn waits for its user to connect a server it needs (within the turn's own
# GLASSBOX_TURN_TIMEOUT).
GLASSBOX_OAUTH_CONSENT_TIMEOUT = env_float("GLASSBOX_OAUTH_CONSENT_TIMEOUT", 240.0)
# Seconds between a server process's looks at its MCP servers: it opens those added since,
# and writes what it sees of each for the admin's health page (chat.servers.heartbeat).
GLASSBOX_MCP_HEARTBEAT_SECONDS = env_float("GLASSBOX_MCP_HEARTBEAT_SECONDS", 10.0)
# Characters of an MCP tool's text result the model is given.
GLASSBOX_MCP_RESULT_CHARS = env_int("GLASSBOX_MCP_RESULT_CHARS", 8000)
# Which tools ask their user before each call, by name, over each tool's own setting (a
# built-in tool's flag, an MCP server's admin choice): {"send_email": false, "crm__update": true}.
try:
    GLASSBOX_APPROVAL = approval_setting(env_str("GLASSBOX_APPROVAL", ""))
except ValueError as exc:
    raise ImproperlyConfigured(f"GLASSBOX_APPROVAL: {exc}") from None
# Seconds a tool call waits for its approval before it is denied as timed out.
GLASSBOX_APPROVAL_TIMEOUT = env_float("GLASSBOX_APPROVAL_TIMEOUT", 600.0)
# Seconds an MCP server's question (elicitation) waits for its answer before it is cancelled;
# the call's own time limit stands still meanwhile, the turn's (GLASSBOX_TURN_TIMEOUT) does not.
GLASSBOX_ELICITATION_TIMEOUT = env_float("GLASSBOX_ELICITATION_TIMEOUT", 120.0)
# A call waiting for its question's answer looks at the question's row this often, in case
# the channel layer lost the message of an answer given on another process.
GLASSBOX_QUESTION_POLL_SECONDS = env_float("GLASSBOX_QUESTION_POLL_SECONDS", 1.0)
# Ask the provider for token usage in the stream (stream_options.include_usage).
GLASSBOX_STREAM_USAGE = env_bool("GLASSBOX_STREAM_USAGE", True)
# Traces (activity.telemetry), by OpenTelemetry's standard variables: each finished turn goes
# to the traces endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or the traces path under
# OTEL_EXPORTER_OTLP_ENDPOINT) over OTLP/HTTP or gRPC; none set, or OTEL_SDK_DISABLED=true:
# nothing goes and OpenTelemetry's SDK is not even imported. The SDK's exporter reads the
# headers, timeout and certificates itself. What was said goes only when the GenAI
# conventions' own switch asks for it.
OTEL_SDK_DISABLED = env_bool("OTEL_SDK_DISABLED")
OTEL_EXPORTER_OTLP_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
try:
    OTEL_TRACES_PROTOCOL = traces_protocol(
        env_str("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), env_str("OTEL_EXPORTER_OTLP_PROTOCOL")
    )
except ValueError as exc:
    raise ImproperlyConfigured(f"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: {exc}") from None
OTEL_CAPTURE_MESSAGE_CONTENT = env_bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
# Prices per million tokens by model, as JSON: {"gpt-4o-mini": {"prompt": 0.15,
# "completion": 0.6, "cached": 0.075}}; turns of a priced model show their cost.
# Read, and checked at start-up, by activity.usage.configured_prices().
GLASSBOX_PRICES = env_str("GLASSBOX_PRICES", "")
# The currency GLASSBOX_PRICES are in, as costs are shown.
GLASSBOX_CURRENCY = env_str("GLASSBOX_CURRENCY", "USD")
# Tokens one user may use a day (UTC); 0 for no limit.
GLASSBOX_DAILY_TOKENS = env_int("GLASSBOX_DAILY_TOKENS", 0)
# Earlier turns sent to the model, trimmed from the oldest to this many characters.
GLASSBOX_HISTORY_CHARS = env_int("GLASSBOX_HISTORY_CHARS", 24000)
# People rate answers and tool calls (👍/👎 and a note); off, the buttons go and ratings are
# refused. Auditors' labels stay.
GLASSBOX_RATINGS = env_bool("GLASSBOX_RATINGS", True)
# Phoenix's address: with traces on, each rating and label goes to its span annotation API.
GLASSBOX_PHOENIX_URL = env_str("GLASSBOX_PHOENIX_URL", "")
# The labels auditors give tool calls (issue 54), comma-separated; each at most 64 characters.
GLASSBOX_SCORE_LABELS = env_list(
    "GLASSBOX_SCORE_LABELS",
    "correct,wrong tool,wrong arguments,unsafe,should have asked,hallucinated result",
)
# How the live feed is presented (docs/feed.md); each user can override these.
GLASSBOX_FEED = {
    "MODE": env_str("GLASSBOX_FEED_MODE", "partial"),
    "LABEL": env_str("GLASSBOX_FEED_LABEL", "auto"),
    "LABELS": env_list("GLASSBOX_FEED_LABELS", "") or None,
    "SHOW_AFTER": env_float("GLASSBOX_FEED_SHOW_AFTER", 5.0),
    "MAX_LINES": env_int("GLASSBOX_FEED_MAX_LINES", 6),
    "DETAIL": env_str("GLASSBOX_FEED_DETAIL", "explain"),
    "TOOL_PROGRESS": env_bool("GLASSBOX_FEED_TOOL_PROGRESS", True),
    "LINE_WIDTH": env_int("GLASSBOX_FEED_LINE_WIDTH", 80),
    # Tokens and cost on a folded feed: for auditors (admin, export, API), and for users who
    # turn them on; by default a user sees the steps and the time (seed 002).
    "SHOW_USAGE": env_bool("GLASSBOX_FEED_SHOW_USAGE", False),
    # 👍/👎 to rate answers and tool calls, for users who keep them (GLASSBOX_RATINGS: the site).
    "SHOW_RATINGS": env_bool("GLASSBOX_FEED_SHOW_RATINGS", True),
    # "rich" lays each feed line out as fields (action, subject, detail, outcome, duration);
    # "plain" shows it as one text. The text reads the same either way.
    "RENDER": env_str("GLASSBOX_FEED_RENDER", "plain"),
    # The least severe MCP log message shown under its call's line (MCP's levels, debug to
    # emergency); every message is recorded, within its per-call bound, whatever is chosen.
    "MCP_LOG_LEVEL": env_str("GLASSBOX_FEED_MCP_LOG_LEVEL", "warning"),
    # What users see of a reasoning model's thinking: "full" (the 💭 lines, and the reasoning
    # in the expanded feed), "duration" (the lines only) or "off"; admins always see it.
    "SHOW_REASONING": env_str("GLASSBOX_SHOW_REASONING", "full"),
}
# Each surface's own defaults, as JSON: {"page": {...}, "program": {...}} with the keys above.
# The page starts from GLASSBOX_FEED; programs (the JSON socket, SSE) from
# activity.preferences.PROGRAM_DEFAULTS (every frame, as before surfaces existed).
GLASSBOX_FEED_SURFACES = env_json("GLASSBOX_FEED_SURFACES")

REST_FRAMEWORK = {
    # Token first, so an unauthenticated program gets 401 with `WWW-Authenticate: Token`.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Programs send JSON; a form-encoded body is refused with 415 instead of half-parsed.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # `format` is the export's own parameter (ndjson, csv, json), not DRF's renderer switch.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Glassbox API",
    "DESCRIPTION": "Conversations, turns and the activity feeds of an agent that shows its work.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page loads Swagger UI from the installed sidecar package: it works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The views' annotations wait for the first schema built (project.openapi.documented).
    "PREPROCESSING_HOOKS": ["project.openapi.document_views"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "project.openapi.add_error_responses",
    ],
}
