"""Optional imports a process of this configuration never uses, kept out of it.

Some libraries import an extra whenever it is installed. DRF maps `django.contrib.postgres`'s
model fields, which loads psycopg and libpq (about 9 MiB a process), even on SQLite. Twisted
loads pyOpenSSL and with it cryptography's OpenSSL bindings (about 6 MiB) for TLS, which a
Daphne serving plain TCP behind a proxy never speaks. A None in `sys.modules` makes such an
import fail as if the package were not installed; both libraries have a fallback for that,
and nothing else in such a process imports them."""

from __future__ import annotations

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


def leave_out(*modules: str) -> None:
    """Call before the libraries that would import them; one already imported stays."""
    for module in modules:
        sys.modules.setdefault(module, None)  # type: ignore[arg-type]


def let_in(*modules: str) -> None:
    """Undoes leave_out for the imports still to come: they find the packages again."""
    for module in modules:
        if module in sys.modules and sys.modules[module] is None:
            del sys.modules[module]


def speaks_tls(daphne_args: list[str]) -> bool:
    """Whether Daphne is asked for a TLS endpoint (`-e ssl:443:privateKey=…`)."""
    return any(arg.startswith(("ssl:", "tls:")) or "=ssl:" in arg for arg in daphne_args)
