from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.events import to_json
from chat.models import Conversation
from tests.support.api import logged_in
from tests.support.responses import streamed
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(alice, bob, knowledge_base):
    mine = Conversation.objects.create(owner=alice)
    search = run_turn(mine, "How do I negotiate my salary?")
    direct = run_turn(mine, "Tell me a joke")
    theirs = Conversation.objects.create(owner=bob)
    bobs = run_turn(theirs, "What is 2 + 2?")
    return {"mine": mine, "theirs": theirs, "search": search, "direct": direct, "bobs": bobs}


@pytest.fixture
def staff(db):
    """An auditor: staff with the view permission on feeds."""
    user = get_user_model().objects.create_user("root", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_activityfeed"))
    return user


ENDPOINTS = ["/api/conversations/", "/api/feeds/", "/api/feeds/export/"]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_anonymous_programs_get_401_not_a_login_page(client, world, url):
    response = client.get(url)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")


def test_the_permission_matrix(client, alice, bob, staff, world):
    search, bobs = world["search"], world["bobs"]
    expectations = {
        # user: (sees alice's feed, sees bob's feed, alice's conversation status)
        "alice": (True, False, 200),
        "bob": (False, True, 404),
        "root": (True, True, 404),  # staff audit feeds, but conversations stay private
    }
    for user in (alice, bob, staff):
        client.logout()
        client.force_login(user)
        alice_feed, bob_feed, conversation_status = expectations[user.username]
        ids = {feed["id"] for feed in client.get("/api/feeds/").json()["results"]}
        assert (search.feed_id in ids, bobs.feed_id in ids) == (alice_feed, bob_feed)
        detail = client.get(f"/api/feeds/{search.feed_id}/").status_code
        assert detail == (200 if alice_feed else 404)
        mine = client.get(f"/api/conversations/{world['mine'].pk}/").status_code
        assert mine == conversation_status
        conversations = client.get("/api/conversations/").json()["results"]
        assert all(c["id"] != str(world["theirs"].pk) for c in conversations) == (
            user.username != "bob"
        )


def test_a_token_authenticates_a_program(client, alice, world):
    token = Token.objects.create(user=alice)
    response = client.get("/api/feeds/", headers={"Authorization": f"Token {token.key}"})
    assert response.status_code == 200
    assert len(response.json()["results"]) == 2
    bad = client.get("/api/feeds/", headers={"Authorization": "Token not-a-token"})
    assert bad.status_code == 401


def test_creating_a_conversation(client, alice):
    client.force_login(alice)
    response = client.post(
        "/api/conversations/", {"title": "Budget"}, content_type="application/json"
    )
    assert response.status_code == 201
    assert Conversation.objects.get(pk=response.json()["id"]).owner == alice


def test_a_conversation_has_its_messages_each_answer_with_its_feed(client, alice, world):
    client.force_login(alice)
    data = client.get(f"/api/conversations/{world['mine'].pk}/").json()
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    feed = data["messages"][1]["feed"]
    assert feed["summary"] == {"icon": "📄", "text": "Searched the knowledge base"}
    assert feed["message"] == data["messages"][1]["id"]
    assert feed["user"] == "alice"
    stored = ActivityEvent.objects.filter(feed_id=feed["id"]).order_by("seq")
    assert feed["events"] == [to_json(e.to_event()) for e in stored]
    assert data["messages"][0]["feed"] is None


def test_feed_filters(client, alice, staff, world):
    client.force_login(alice)

    def ids(query):
        response = client.get(f"/api/feeds/?{query}")
        assert response.status_code == 200, response.content
        return {feed["id"] for feed in response.json()["results"]}

    search, direct = world["search"].feed_id, world["direct"].feed_id
    assert ids(f"conversation={world['mine'].pk}") == {search, direct}
    assert ids(f"conversation={world['theirs'].pk}") == set()
    assert ids("tool=search_documents") == {search}
    assert ids("state=complete") == {search, direct}
    assert ids("since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00Z") == set()
    assert ids("since=2000-01-01T00:00:00Z") == {search, direct}
    client.logout()
    client.force_login(staff)
    assert ids("user=bob") == {world["bobs"].feed_id}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=exploded", "state"),
        ("since=yesterday", "since"),
        ("conversation=not-a-uuid", "conversation"),
        ("since=2026-13-45T00:00:00Z", "since"),
        ("until=", "until"),
        ("conversation=", "conversation"),
        ("until=2026-02-30T10:00:00", "until"),
        ("since=9999-12-31T23:59:59-23:59", "since"),
        ("tool=search%00documents", "tool"),
        ("cursor=cD14", "cursor"),
    ],
)
@pytest.mark.parametrize("route", ["/api/feeds/", "/api/feeds/export/"])
def test_bad_filters_are_explained(client, alice, world, query, field, route):
    if route.endswith("export/") and field == "cursor":
        return  # the export has no pages
    client.force_login(alice)
    response = client.get(f"{route}?{query}")
    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize("cursor", ["cD0w", "cD1ub3QtYS1kYXRl", "bz0xJnA9eA=="])
def test_a_made_up_cursor_is_a_400_naming_it(client, alice, world, cursor):
    client.force_login(alice)
    response = client.get(f"/api/conversations/?cursor={cursor}")
    assert response.status_code == 400
    assert "cursor" in response.json()


# DRF read these as the first page: 5,000 characters of base64 with none of its keys in it,
# one naming a key it does not write, a real cursor padded to 5,000 characters.
@pytest.mark.parametrize(
    "cursor", ["A" * 5_000, "eD0x", "cD0x" + "A" * 4_996], ids=["zeros", "x=1", "padded"]
)
@pytest.mark.parametrize("route", ["/api/conversations/", "/api/feeds/"])
def test_a_cursor_drf_never_wrote_is_a_400_not_the_first_page(client, alice, world, cursor, route):
    client.force_login(alice)
    response = client.get(f"{route}?cursor={cursor}")
    assert response.status_code == 400
    assert "cursor" in response.json()


@pytest.mark.asyncio
async def test_an_export_that_fails_midway_ends_and_says_so(alice, world, monkeypatch):
    from activity.auditing import export

    real = export.feed_data
    served: list[int] = []

    def failing_after_one(feed, events, **names):
        if served:
            raise RuntimeError("the database went away")
        served.append(feed.pk)
        return real(feed, events, **names)

    monkeypatch.setattr(export, "feed_data", failing_after_one)
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.get("/api/feeds/export/?format=ndjson")
    lines = b"".join(await streamed(response)).decode().splitlines()
    assert response.status_code == 200
    assert json.loads(lines[0])["id"] == served[0]
    assert "stopped early" in json.loads(lines[-1])["error"]


def test_a_question_or_title_that_cannot_be_stored_is_refused_over_the_api(client, alice):
    client.force_login(alice)
    response = client.post(
        "/api/conversations/", {"title": "Pay\x00review"}, content_type="application/json"
    )
    assert response.status_code == 400 and "Null characters" in response.json()["title"][0]
    response = client.post(
        "/api/conversations/", {"title": "\u200b"}, content_type="application/json"
    )
    assert response.status_code == 400 and "title" in response.json()
    assert not Conversation.objects.exists()


def test_feeds_come_newest_first_a_cursor_page_at_a_time(client, alice, world, monkeypatch):
    from activity.api.views import NewestFeedsFirst

    monkeypatch.setattr(NewestFeedsFirst, "page_size", 1)
    client.force_login(alice)
    first = client.get("/api/feeds/").json()
    second = client.get(first["next"]).json()
    assert [first["results"][0]["id"], second["results"][0]["id"]] == [
        world["direct"].feed_id,
        world["search"].feed_id,
    ]
    assert second["next"] is None


async def export(user, query: str):
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(f"/api/feeds/export/?{query}")
    assert response.streaming, "the export is streamed, not built in memory"
    body = b"".join(await streamed(response)).decode()
    return response, body


def stored_events():
    return {
        feed.pk: [to_json(e.to_event()) for e in feed.events.order_by("seq")]
        for feed in ActivityFeed.objects.all()
    }


@pytest.mark.asyncio
async def test_ndjson_and_json_exports_round_trip_the_events(alice, world):
    from asgiref.sync import sync_to_async

    events = await sync_to_async(stored_events)()
    response, body = await export(alice, "format=ndjson")
    assert response["Content-Type"] == "application/x-ndjson"
    feeds = [json.loads(line) for line in body.splitlines()]
    assert {f["id"] for f in feeds} == {world["search"].feed_id, world["direct"].feed_id}
    assert all(f["events"] == events[f["id"]] for f in feeds)
    _, body = await export(alice, "format=json&tool=search_documents")
    (only,) = json.loads(body)
    assert only["events"] == events[world["search"].feed_id]


@pytest.mark.asyncio
async def test_csv_export_has_an_event_per_row_and_defuses_formulas(alice, world):
    from asgiref.sync import sync_to_async

    feed = world["search"].feed
    await sync_to_async(ActivityEvent.objects.create)(
        feed=feed, seq=99, kind="status", icon="=", message="=HYPERLINK(\"http://x\")",
        state="done", tool="@SUM(A1)",
    )  # fmt: skip
    response, body = await export(alice, "format=csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(body)))
    search_rows = [r for r in rows if r["feed_id"] == str(feed.pk)]
    assert [r["seq"] for r in search_rows] == [str(n) for n in range(1, 8)] + ["99"]
    evil = search_rows[-1]
    assert evil["message_text"] == '\'=HYPERLINK("http://x")'
    assert evil["tool"] == "'@SUM(A1)" and evil["icon"] == "'="
    call = next(r for r in search_rows if r["type"] == "tool_call")
    assert json.loads(call["arguments"])["query"] == "negotiate salary"


@pytest.mark.asyncio
async def test_an_unknown_export_format_is_refused(alice, world):
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.get("/api/feeds/export/?format=xlsx")
    assert response.status_code == 400
    assert "ndjson" in response.json()["format"]


@pytest.mark.asyncio
async def test_the_export_only_holds_ones_own_feeds(bob, world):
    _, body = await export(bob, "format=ndjson")
    assert [json.loads(line)["id"] for line in body.splitlines()] == [world["bobs"].feed_id]


def test_the_schema_validates_and_the_docs_work_offline(client, alice):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
    client.force_login(alice)
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in docs
    assert "cdn" not in docs.lower()


def test_a_user_creates_replaces_and_revokes_their_token(client, alice):
    client.force_login(alice)
    assert "You have no API token" in client.get("/accounts/token/").content.decode()
    client.post("/accounts/token/", {"action": "create"})
    first = Token.objects.get(user=alice).key
    assert first in client.get("/accounts/token/").content.decode()
    client.post("/accounts/token/", {"action": "create"})
    assert Token.objects.get(user=alice).key != first
    client.post("/accounts/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=alice).exists()


def test_an_archived_conversation_that_the_list_shows_opens(client, alice, world):
    world["mine"].archived_at = world["mine"].created_at
    world["mine"].save()
    logged_in(client, alice)
    listed = [c["id"] for c in client.get("/api/conversations/").json()["results"]]
    assert str(world["mine"].pk) in listed
    response = client.get(f"/api/conversations/{world['mine'].pk}/")
    assert response.status_code == 200
    assert len(response.json()["messages"]) == 4


def test_conversations_come_newest_first_by_when_they_were_made(client, alice):
    made = [Conversation.objects.create(owner=alice, title=f"c{n}") for n in range(6)]
    logged_in(client, alice)
    listed = [c["title"] for c in client.get("/api/conversations/").json()["results"]]
    assert listed == [c.title for c in reversed(made)]


def test_the_conversation_list_costs_the_same_queries_for_1_or_10_untitled_ones(client, alice):
    logged_in(client, alice)
    Conversation.objects.create(owner=alice)
    with CaptureQueriesContext(connection) as one:
        client.get("/api/conversations/")
    for _ in range(9):
        run_turn(Conversation.objects.create(owner=alice), "Tell me a joke")
    with CaptureQueriesContext(connection) as ten:
        titles = [c["title"] for c in client.get("/api/conversations/").json()["results"]]
    assert titles.count("Tell me a joke") == 9
    assert len(ten.captured_queries) == len(one.captured_queries)


def test_staff_without_the_audit_permission_read_only_their_own_feeds(client, alice, world):
    """What the admin says of such an account holds in the API too."""
    clerk = get_user_model().objects.create_user("clerk", password="x", is_staff=True)
    logged_in(client, clerk)
    assert client.get("/api/feeds/").json()["results"] == []
    response = client.get("/api/feeds/export/?user=alice")
    assert response.status_code == 403
    assert "activity.view_activityfeed" in response.json()["detail"]
    assert client.get(f"/api/feeds/{world['search'].feed_id}/").status_code == 404
    assert client.get("/admin/activity/activityfeed/dashboard/").status_code == 403


@pytest.mark.parametrize("route", ["/api/feeds/", "/api/feeds/export/"])
def test_only_auditors_filter_by_user(client, alice, world, route):
    client.force_login(alice)
    response = client.get(f"{route}?user=bob")
    assert response.status_code == 403 and "auditors" in response.json()["detail"]


@pytest.mark.parametrize(
    "path", ["/api/conversations/null,null/", "/api/feeds/x/", "/api/nowhere/"]
)
def test_a_path_that_matches_nothing_is_a_json_404(client, alice, path):
    client.force_login(alice)
    response = client.get(path)
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_a_body_that_is_not_json_is_refused(client, alice):
    client.force_login(alice)
    response = client.post("/api/conversations/", {"title": "form-encoded"})
    assert response.status_code == 415
    assert not Conversation.objects.exists()


def test_the_views_annotations_show_in_the_schema_each_time_it_is_built(client, alice):
    client.force_login(alice)

    def built() -> dict:
        return json.loads(
            client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
        )

    first = built()
    dataset = first["paths"]["/api/feeds/dataset/"]["get"]
    names = [parameter["name"] for parameter in dataset["parameters"]]
    assert sorted(names) == ["format", "label", "rating", "since", "tool", "until"]
    assert set(dataset["responses"]["200"]["content"]) == {"application/jsonl"}
    assert built() == first


def test_the_schema_says_how_each_operation_fails(client, alice):
    client.force_login(alice)
    schema = json.loads(
        client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    )
    turns = schema["paths"]["/api/conversations/{conversation_id}/messages/"]["post"]
    assert {"400", "401", "404", "409", "415", "429", "503"} <= set(turns["responses"])
    content = turns["requestBody"]["content"]["application/json"]["schema"]
    question = schema["components"]["schemas"][content["$ref"].split("/")[-1]]["properties"]
    assert question["content"]["maxLength"] == 8000 and question["content"]["minLength"] == 1
    feeds = schema["paths"]["/api/feeds/{id}/"]["get"]["responses"]["200"]["content"]
    feed = feeds["application/json"]["schema"]["$ref"].split("/")[-1]
    assert "events" in schema["components"]["schemas"][feed]["properties"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/conversations/", {"title": 0}, "title"),
        ("/api/conversations/", {"title": " " * 150 + "x" * 60}, "title"),
        ("messages", {"content": "Hi", "client_id": False}, "client_id"),
        ("messages", {"content": 42}, "content"),
    ],
)
def test_values_of_the_wrong_type_are_refused_not_converted(
    client, alice, alice_conversation, path, body, field
):
    if path == "messages":
        path = f"/api/conversations/{alice_conversation.pk}/messages/"
    client.force_login(alice)
    response = client.post(path, body, content_type="application/json")
    assert response.status_code == 400 and field in response.json()
    assert Conversation.objects.count() == 1  # alice_conversation only


def test_the_schema_says_a_body_holds_only_the_fields_that_are_read(client, alice):
    from chat.turns import actions

    client.force_login(alice)
    schema = json.loads(
        client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    )
    components = schema["components"]["schemas"]
    read_by = {
        "/api/conversations/": {"title"},
        "/api/conversations/{conversation_id}/messages/": set(actions.QUESTION_BODY),
        "/api/conversations/{conversation_id}/approvals/{call_id}/": set(actions.DECISION_BODY),
    }
    for path, fields in read_by.items():
        operation = schema["paths"][path]["post"]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = components[ref.split("/")[-1]]
        writable = {name for name, spec in body["properties"].items() if not spec.get("readOnly")}
        assert writable == fields and body["additionalProperties"] is False
        assert "nested at most 8 levels deep" in operation["responses"]["400"]["description"]
