"""A socket that keeps checking its right: it is closed for good when a right it relied on is
taken away (told through the channel layer by chat.socket.revocation), when its periodic check
or a new turn's check finds it gone, and shows nothing that arrives after."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import Any

from django.conf import settings

from chat.models import Conversation
from chat.socket import reads, relay
from chat.socket.dispatch import Clock, DirectConsumer
from chat.socket.rechecks import rechecks
from chat.socket.revocation import session_group, user_group

logger = logging.getLogger("glassbox.sockets")

# Close codes in the 4000s: htmx's ws extension reconnects only after 1006/1011/1012/1013.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_CODES = {
    reads.Refused.SESSION: CLOSE_UNAUTHENTICATED,
    reads.Refused.CONVERSATION: CLOSE_NOT_FOUND,
}


class GuardedConsumer(DirectConsumer):
    permit: reads.Permit
    # Closed by the server: nothing more is shown, whatever is still on its way.
    ended = False

    async def watch(self, user: Any, conversation: Conversation, also: Sequence[str] = ()) -> None:
        """Joins the groups through which a lost right is told (the conversation's also
        carries its turns) and `also`, and keeps what each later check compares with: the
        login session as it was verified when the socket opened."""
        session = self.scope["session"]
        self.session_key = session.session_key or ""
        stored = getattr(session, "stored", None)
        seen = (stored, user.password) if stored else None
        self.permit = reads.Permit(self.session_key, user.pk, conversation.pk, seen=seen)
        self.groups = [
            conversation.group_name,
            session_group(self.session_key),
            user_group(user.pk),
            *also,
        ]
        for group in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
        relay.ensure_relaying()

    def clock(self) -> Clock:
        """Every GLASSBOX_SOCKET_RECHECK_SECONDS the socket checks its right again, so a
        login that expired, or a change no signal announced, closes a socket that neither
        speaks nor is shown a new turn. Spread out, so sockets opened together do not all
        check at once; made beside the socket's messages (the check waits for others to share
        its trip), a refusal then handled in order with them."""

        def every() -> float:
            return settings.GLASSBOX_SOCKET_RECHECK_SECONDS * random.uniform(0.5, 1.0)

        return Clock(every, self._check_aside)

    async def _check_aside(self) -> dict[str, Any] | None:
        if self.ended or not hasattr(self, "permit"):  # refused as it opened
            return None
        try:
            await rechecks().check(self.permit)
        except reads.NotAllowed as problem:
            return {"type": "access.refused", "reason": problem.reason.value}
        except Exception:  # the database out of reach: the batch said so; checked next time
            pass
        return None

    def stop_showing(self) -> None:
        """Stops whatever the socket shows; the consumer says what that is."""

    async def end(self, code: int) -> None:
        """Closes the socket for good: what it shows stops at once, and nothing that arrives
        after is shown."""
        self.ended = True
        self.stop_showing()
        await self.close(code=code)

    async def refused(self, problem: reads.NotAllowed) -> None:
        logger.info("a socket's check found its right gone (%s)", problem.reason.value)
        await self.end(CLOSE_CODES[problem.reason])

    # Channel-layer handlers (chat.socket.revocation sends them).

    async def access_ended(self, message: dict[str, Any]) -> None:
        """A right this socket relied on was taken away."""
        if not self.ended:
            logger.info("a socket was told its right is gone (%s)", message["reason"])
            await self.end(CLOSE_CODES[reads.Refused(message["reason"])])

    async def session_ended(self, message: dict[str, Any]) -> None:
        """A logout announced by a process of the previous release, during a rolling deploy."""
        await self.access_ended({"reason": reads.Refused.SESSION.value})

    async def access_refused(self, message: dict[str, Any]) -> None:
        """The socket's own periodic check found its right gone."""
        if not self.ended:
            await self.refused(reads.NotAllowed(reads.Refused(message["reason"])))
