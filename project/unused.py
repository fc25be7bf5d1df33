"""Optional imports a process of this configuration never uses, kept out of it.

Some libraries import an extra whenever it is installed. DRF maps `django.contrib.postgres`'s
model fields, which loads psycopg and libpq (about 9 MiB a process), even on SQLite. Twisted
loads pyOpenSSL and with it cryptography's OpenSSL bindings (about 6 MiB) for TLS, which a
Daphne serving plain TCP behind a proxy never speaks. A None in `sys.modules` makes such an
import fail as if the package were not installed; both libraries have a fallback for that,
and nothing else in such a process imports them. A module a library imports without such a
fallback, but never calls here, is loaded on first use instead (`load_on_use`)."""

from __future__ import annotations

import importlib.util
import sys

POSTGRES_FIELDS = "django.contrib.postgres.fields"
TLS = "OpenSSL"
# DRF imports both whenever they are installed (a test client, code highlighting in its
# browsable API's docs); a serving process uses neither, about 5 MiB with what they import.
# The OTLP exporter needs requests: it is let in again once the application is imported.
DRF_EXTRAS = ("requests", "pygments")
# Autobahn colours the fields of a debug line about every frame it sends with click whenever
# click is installed (the dev tools bring it), and formats them whether debug lines are
# logged or not: four styled strings a frame. Without click they are plain text.
HIGHLIGHTING = "click"
# Autobahn's Twisted package imports its WAMP support, whose authenticators import
# cryptography's primitives (about 6 MiB a process, bench/idle_memory.py): Daphne speaks
# plain WebSocket and never authenticates a WAMP session. It loads on first use.
WAMP_AUTH = "autobahn.wamp.auth"


def leave_out(*modules: str) -> None:
    """Call before the libraries that would import them; one already imported stays."""
    for module in modules:
        sys.modules.setdefault(module, None)  # type: ignore[arg-type]


def load_on_use(*modules: str) -> None:
    """Each module runs when something first uses it, not when it is imported (importlib's
    LazyLoader). Call before the libraries that import them; one already imported stays."""
    for name in modules:
        if name in sys.modules or (spec := importlib.util.find_spec(name)) is None:
            continue
        loader = spec.loader
        assert loader is not None
        spec.loader = importlib.util.LazyLoader(loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        # Seen on its package too, so `from package import module` finds it there instead
        # of importing it again, which would read its spec and run it.
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, module)


def let_in(*modules: str) -> None:
    """Undoes leave_out for the imports still to come: they find the packages again."""
    for module in modules:
        if module in sys.modules and sys.modules[module] is None:
            del sys.modules[module]


def speaks_tls(daphne_args: list[str]) -> bool:
    """Whether Daphne is asked for a TLS endpoint (`-e ssl:443:privateKey=…`)."""
    return any(arg.startswith(("ssl:", "tls:")) or "=ssl:" in arg for arg in daphne_args)
