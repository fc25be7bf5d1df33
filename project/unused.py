"""Optional imports a process of this configuration never uses, kept out of it.

Some libraries import an extra whenever it is installed. DRF maps `django.contrib.postgres`'s
model fields, which loads psycopg and libpq (about 9 MiB a process), even on SQLite. Twisted
loads pyOpenSSL and with it cryptography's OpenSSL bindings (about 6 MiB) for TLS, which a
Daphne serving plain TCP behind a proxy never speaks. A None in `sys.modules` makes such an
import fail as if the package were not installed; both libraries have a fallback for that,
and nothing else in such a process imports them. A module a library imports without such a
fallback, but never calls here, is loaded on first use instead (`load_on_use`); a package
whose `__init__` imports every module in it, of which a process uses a few, runs that
`__init__` only when a name it alone provides is asked for (`defer_init`)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

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
# The model's SDK imports its types package, and with it a pydantic model or TypedDict of
# every API's every object (about 470 modules, 9 MiB a process: about what 100 running
# turns hold). Glassbox sends its requests through the SDK's client and reads
# the streams as JSON (chat.agent.chunks): the SDK's own imports need a few dozen of them.
SDK_TYPES = ("openai.types", "openai.types.responses")
# The SDK's package and its helpers' package: their `__init__`s import the helpers for
# every API (Azure's and Bedrock's clients, pydantic tools, the chat types they are built
# on; about 90 modules, 2 MiB a process). Glassbox imports the client from its module.
SDK_PACKAGES = ("openai", "openai.lib")
# The SDK's HTTP library imports its own transport's package to make a TLS context: its
# connection pools, HTTP/2, SOCKS and trio support (1.9 MiB a process). Glassbox's provider
# client sends through aiohttp and makes that context from the package's TLS module alone
# (chat.agent.provider_http).
SDK_TRANSPORT = "httpcore2"


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


def defer_init(*packages: str) -> None:
    """Each package imports, and its modules do, without its `__init__` running: that runs
    when a name is asked of the package that is not one of its modules (a class its
    `__init__` imports, `__all__`). Call before anything imports the packages; one already
    imported stays."""
    waiting = {name for name in packages if name not in sys.modules}
    if waiting:
        sys.meta_path.insert(0, _DeferredInits(waiting))


class _DeferredInits(importlib.abc.MetaPathFinder):
    def __init__(self, packages: set[str]) -> None:
        self.packages = packages

    def find_spec(self, name: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if name not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None
        spec.loader = _InitOnUse(spec.loader)
        return spec


class _InitOnUse(importlib.abc.Loader):
    """Imports the package as an empty module with its path, so its modules import; its
    `__init__` runs, in that module, when it is first asked for a name it lacks."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        loader = self.loader
        # Its own: a thread may import a module of another package while this one's
        # `__init__` runs.
        running = threading.RLock()
        # Set while the `__init__` runs, for the thread running it.
        running_here: list[bool] = []

        def __getattr__(attribute: str) -> Any:
            if not attribute.startswith("__") and _has_module(module, attribute):
                return importlib.import_module(f"{module.__name__}.{attribute}")
            # Another thread waits here while the `__init__` runs, as for any import; the
            # thread running it (the `__init__` asking for a name it has not bound yet) gets
            # what a module that is still importing gives.
            with running:
                if module.__dict__.get("__getattr__") is __getattr__ and not running_here:
                    running_here.append(True)
                    try:
                        loader.exec_module(module)
                    except Exception as problem:
                        raise ImportError(f"{module.__name__} failed to import") from problem
                    else:
                        if module.__dict__.get("__getattr__") is __getattr__:
                            del module.__dict__["__getattr__"]  # not one its `__init__` made
                    finally:
                        running_here.clear()
            return object.__getattribute__(module, attribute)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


def _has_module(package: ModuleType, name: str) -> bool:
    name = f"{package.__name__}.{name}"
    return importlib.machinery.PathFinder.find_spec(name, package.__path__) is not None


def let_in(*modules: str) -> None:
    """Undoes leave_out for the imports still to come: they find the packages again."""
    for module in modules:
        if module in sys.modules and sys.modules[module] is None:
            del sys.modules[module]


def speaks_tls(daphne_args: list[str]) -> bool:
    """Whether Daphne is asked for a TLS endpoint (`-e ssl:443:privateKey=…`)."""
    return any(arg.startswith(("ssl:", "tls:")) or "=ssl:" in arg for arg in daphne_args)
