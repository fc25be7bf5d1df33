"""A graceful restart under Daphne: on SIGTERM the process stops taking new turns, lets its
running turns finish (at most GLASSBOX_DRAIN_SECONDS) and their streams end, and only then
stops. Its sockets then drop without a close frame (1006), which htmx's ws extension retries,
reaching another process: Daphne's WebSocket library sends no 1012 ("service restart"), and a
4xxx code would tell htmx never to retry."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from django.conf import settings

from chat.agent.client import close_clients
from chat.turns import registry

logger = logging.getLogger("glassbox.shutdown")


def drain_on_sigterm() -> None:
    """Under Daphne only: Twisted installs its own SIGTERM handler (stop at once) when its
    reactor starts, so ours is installed right after, replacing it."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "_asyncioEventloop"):
        return  # not served by Daphne (tests, management commands)
    reactor.callWhenRunning(_install, reactor)


def _install(reactor) -> None:
    loop = asyncio.get_event_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: loop.create_task(_drain_then_stop(reactor)))


async def _drain_then_stop(reactor) -> None:
    if registry.draining():
        reactor.stop()  # a second SIGTERM: stop now
        return
    registry.start_draining()
    try:
        if registry.running() or registry.streams():
            # Said only when there is something to wait for: a stop with nothing running
            # (a person stopping `make run`, an idle process restarted) is quiet.
            logger.info(
                "stopping: waiting for %d running turn(s) and %d stream(s) to end",
                len(registry.running()),
                registry.streams(),
            )
        async with asyncio.timeout(settings.GLASSBOX_DRAIN_SECONDS):
            await registry.finish_all()
            # Their streams end once `done` reached them through the channel layer.
            await registry.streams_ended()
    except TimeoutError:
        logger.warning(
            "stopping: %d turn(s) and %d stream(s) did not end in time",
            len(registry.running()),
            registry.streams(),
        )
    finally:
        # Whatever happened above, the process stops: let the last bytes leave, then drop
        # every connection. A turn still running is not cancelled (nor Stopped: its owner
        # asked nothing); it stops beating with the process and another one recovers it as
        # `interrupted`, the server's doing. Were its task cancelled here, its runner would
        # end it `interrupted` too: only an owner's Stop (registry.stop) makes it `stopped`.
        await asyncio.sleep(0.1)
        try:
            await close_clients()  # the provider's connections, closed rather than dropped
        finally:
            reactor.stop()
