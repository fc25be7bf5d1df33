from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.utils import translation

from chat.demo_documents import DOCUMENTS
from chat.models import Conversation, Document


@pytest.fixture(autouse=True)
def fast_agent(settings):
    """The demo model without its human-watchable pace, and a tiny text-frame window."""
    settings.GLASSBOX_DEMO_DELAY = 0
    settings.GLASSBOX_TEXT_FRAME_SECONDS = 0.005
    settings.OPENAI_API_KEY = ""
    settings.GLASSBOX_MODEL = "glassbox-demo"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def english_unless_asked():
    """Django keeps the language a request activated in its thread: a page one test asked for
    in Chinese must not make the next test's turn Chinese."""
    translation.activate("en")
    yield
    translation.deactivate()


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="alice-password")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="bob-password")


@pytest.fixture
def knowledge_base(db):
    return Document.objects.bulk_create(
        Document(title=title, language=language, body=body) for title, language, body in DOCUMENTS
    )


@pytest.fixture
def alice_conversation(alice):
    return Conversation.objects.create(owner=alice)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


def session_cookie_for(user) -> bytes:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(
    conversation_id, user=None, *, as_json: bool = False, headers=()
) -> WebsocketCommunicator:
    """A socket to the full ASGI app (origin check, auth, routing), logged in as user; as_json
    asks for JSON events with the glassbox.json subprotocol; headers are a browser's extra
    ones (Accept-Language)."""
    from project.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), *headers]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(session_cookie_for)(user)))
    return WebsocketCommunicator(
        application,
        f"/ws/c/{conversation_id}/",
        headers=headers,
        subprotocols=["glassbox.json"] if as_json else None,
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Browser tests run last, after the random shuffle: Playwright's sync API keeps an event
    loop running in the main thread for the rest of the session, which async_to_sync refuses."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)
