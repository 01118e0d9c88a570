"""Django settings: every value comes from the environment through typed helpers.

The embedded default (no variables set) is a complete single-machine stack: SQLite under
``var/``, kombu's filesystem broker, local storage. Each variable is listed in README.md.
"""

from __future__ import annotations

import dj_database_url

from workers import env, logcontext

VAR_DIR = env.var_dir()
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.env_bool("POSTTRAIN_DEBUG", False)
SECRET_KEY = env.env_str("POSTTRAIN_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env.env_bool("POSTTRAIN_REQUIRE_SECRET_KEY", False):
        raise env.ConfigError("POSTTRAIN_SECRET_KEY must be set")
    SECRET_KEY = "posttrain-embedded-insecure-key-change-me"  # noqa: S105 - embedded default
ALLOWED_HOSTS = env.env_list("POSTTRAIN_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.env_list("POSTTRAIN_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "posttrain_server.tenancy",
    "posttrain_server.files",
    "posttrain_server.jobs",
    "posttrain_server.billing",
    "posttrain_server.pools",
    "posttrain_server.console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "posttrain_server.console.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "posttrain_server.api.middleware.RequestContextMiddleware",
    "posttrain_server.api.middleware.ApiErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# The web console signs people in with sessions (the API uses keys); both act for one org.
LOGIN_URL = "console:login"
LOGIN_REDIRECT_URL = "console:dashboard"
SESSION_COOKIE_AGE = env.env_int("POSTTRAIN_SESSION_AGE_S", 12 * 3600, minimum=60)
SESSION_COOKIE_SAMESITE = "Lax"

ROOT_URLCONF = "posttrain_server.urls"
WSGI_APPLICATION = "posttrain_server.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "posttrain_server.console.context.organizations",
            ]
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        env.env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'posttrain.sqlite3'}"),
        conn_max_age=env.env_int("POSTTRAIN_DB_CONN_MAX_AGE", 0, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Measured on this machine class: IMMEDIATE transactions + WAL gave 0 "database is locked"
    # errors under a concurrent writer, where the defaults gave 18 (TRAINING_NOTES.md).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not memory: end-to-end tests share the test database with worker processes.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve app static files (the locally installed Swagger UI) without a collectstatic step.
WHITENOISE_USE_FINDERS = True

# Uploads larger than this answer 413 before they are stored; the file streams to a temporary
# file on disk (never held in memory) and then to storage.
UPLOAD_MAX_BYTES = env.env_int("POSTTRAIN_UPLOAD_MAX_BYTES", 512 * 1024 * 1024, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = ["posttrain_server.files.upload.CappedUploadHandler"]
DATASET_MAX_LINE_BYTES = env.env_int("POSTTRAIN_DATASET_MAX_LINE_BYTES", 1024 * 1024, minimum=64)
DATASET_MIN_EXAMPLES = env.env_int("POSTTRAIN_DATASET_MIN_EXAMPLES", 10, minimum=1)

# Workers reach the platform here to claim and heartbeat attempts.
PLATFORM_URL = env.env_str("POSTTRAIN_PLATFORM_URL", "http://127.0.0.1:8000")
DEFAULT_POOL = env.env_str("POSTTRAIN_DEFAULT_POOL", "cpu")
LEASE_TIMEOUT_S = env.env_int("POSTTRAIN_LEASE_TIMEOUT_S", 60, minimum=5)
DISPATCH_TIMEOUT_S = env.env_int("POSTTRAIN_DISPATCH_TIMEOUT_S", 600, minimum=5)
MAX_ATTEMPTS = env.env_int("POSTTRAIN_MAX_ATTEMPTS", 3, minimum=1)
REAPER_INTERVAL_S = env.env_int("POSTTRAIN_REAPER_INTERVAL_S", 15, minimum=1)
# A training worker counts as online while its last presence heartbeat is this recent.
WORKER_ONLINE_S = env.env_int("POSTTRAIN_WORKER_ONLINE_S", 30, minimum=1)

# A cache shared by every web process (per-key rate limits): Redis in deployments, a folder
# on one machine.
_cache_url = env.env_str("POSTTRAIN_CACHE_URL", "")
CACHES = {"default": (
    {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
    if _cache_url else
    {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
     "LOCATION": str(VAR_DIR / "cache")}
)}
RATE_LIMIT = env.env_str("POSTTRAIN_RATE_LIMIT", "1200/min")

# Behind TLS (POSTTRAIN_HTTPS=true): redirect to https, HSTS, secure cookies; probes and
# metrics stay reachable over plain HTTP inside the cluster.
HTTPS = env.env_bool("POSTTRAIN_HTTPS", False)
if HTTPS:
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$", r"^internal/"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# If set, /metrics asks for "Authorization: Bearer <token>" (Prometheus' bearer_token).
METRICS_TOKEN = env.env_str("POSTTRAIN_METRICS_TOKEN", "")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["posttrain_server.tenancy.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.FormParser",
    ],
    "EXCEPTION_HANDLER": "posttrain_server.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["posttrain_server.tenancy.auth.ApiKeyRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Posttrain API",
    "DESCRIPTION": (
        "Self-hosted post-training. Compatible with OpenAI's fine-tuning and files API "
        "(point the official client's base_url here); extensions are marked in each schema."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "posttrain_server.api.schema.strict_request_bodies"],
    "SORT_OPERATIONS": False,
}


LOGGING = logcontext.logging_config()
