"""One definition of an auditor (active, staff, the view permission on feeds), the same on
every surface that shows other users' audit data: the admin's feeds, tool calls and
dashboard, the feeds API and its exports."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import AsyncClient

from activity.access import is_auditor
from chat.models import Conversation
from tests.support.turns import run_turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SURFACES = [
    "admin feed list",
    "admin feed page",
    "admin tool calls",
    "admin dashboard",
    "API feed list",
    "API feed of another user",
    "API export of another user",
    "API export of everyone",
]


@pytest.fixture
def bobs_feed(bob, knowledge_base):
    return run_turn(Conversation.objects.create(owner=bob), "How do I negotiate my salary?").feed


@pytest.fixture
def auditor(db):
    user = get_user_model().objects.create_user("carol", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_activityfeed"))
    return user


async def exported(client, query: str) -> list[int]:
    response = await client.get(f"/api/feeds/export/?format=ndjson{query}")
    if response.status_code != 200:
        return []
    body = b"".join([part async for part in response.streaming_content]).decode()
    return [json.loads(line)["id"] for line in body.splitlines()]


async def what_they_read(client, feed) -> dict[str, bool]:
    """Which surfaces show bob's feed (or every user's tool calls) to this client."""
    admin_list = await client.get("/admin/activity/activityfeed/")
    tool_calls = await client.get("/admin/activity/toolcallrecord/")
    listed = await client.get("/api/feeds/")
    return {
        "admin feed list": admin_list.status_code == 200
        and f"/admin/activity/activityfeed/{feed.pk}/change/" in admin_list.content.decode(),
        "admin feed page": (
            await client.get(f"/admin/activity/activityfeed/{feed.pk}/change/")
        ).status_code
        == 200,
        "admin tool calls": tool_calls.status_code == 200
        and f">feed {feed.pk}</a>" in tool_calls.content.decode(),
        "admin dashboard": (
            await client.get("/admin/activity/activityfeed/dashboard/")
        ).status_code
        == 200,
        "API feed list": listed.status_code == 200
        and feed.pk in {row["id"] for row in listed.json()["results"]},
        "API feed of another user": (await client.get(f"/api/feeds/{feed.pk}/")).status_code
        == 200,
        "API export of another user": feed.pk in await exported(client, "&user=bob"),
        "API export of everyone": feed.pk in await exported(client, ""),
    }


async def logged_in(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def test_an_active_staff_account_with_the_permission_reads_every_surface(auditor, bobs_feed):
    assert await what_they_read(await logged_in(auditor), bobs_feed) == dict.fromkeys(
        SURFACES, True
    )


async def test_the_permission_through_a_group_or_as_a_superuser_counts_the_same(
    auditor, bobs_feed
):
    auditors = await Group.objects.acreate(name="auditors")
    await sync_to_async(auditors.permissions.add)(
        await Permission.objects.aget(codename="view_activityfeed")
    )
    await sync_to_async(auditor.user_permissions.clear)()
    await sync_to_async(auditor.groups.add)(auditors)
    assert all((await what_they_read(await logged_in(auditor), bobs_feed)).values())
    root = await get_user_model().objects.acreate(
        username="root", is_staff=True, is_superuser=True
    )
    assert all((await what_they_read(await logged_in(root), bobs_feed)).values())


def without_staff(user) -> None:
    user.is_staff = False
    user.save()


def without_permission(user) -> None:
    user.user_permissions.clear()


def deactivated(user) -> None:
    user.is_active = False
    user.save()


@pytest.mark.parametrize("take_away", [without_staff, without_permission, deactivated])
async def test_taking_away_any_one_condition_ends_audit_access_on_every_surface(
    auditor, bobs_feed, take_away
):
    """The same logged-in session, before and after: the admin, the API and the exports
    agree at once (an account that lost staff used to keep the API's audit)."""
    client = await logged_in(auditor)
    assert all((await what_they_read(client, bobs_feed)).values())
    await sync_to_async(take_away)(auditor)
    assert await what_they_read(client, bobs_feed) == dict.fromkeys(SURFACES, False)


@pytest.mark.parametrize("take_away", [without_staff, without_permission])
async def test_a_former_auditor_keeps_only_their_own_feeds_and_is_told_why(
    auditor, bobs_feed, take_away
):
    await sync_to_async(take_away)(auditor)
    client = await logged_in(auditor)
    assert (await client.get("/api/feeds/")).json()["results"] == []
    response = await client.get("/api/feeds/export/?format=ndjson&user=bob")
    assert response.status_code == 403
    assert (
        "active staff with the activity.view_activityfeed permission"
        in (response.json()["detail"])
    )
    assert (await client.get(f"/api/feeds/{bobs_feed.pk}/")).status_code == 404


async def test_a_superuser_who_is_not_staff_audits_nothing(bobs_feed):
    root = await get_user_model().objects.acreate(username="root", is_superuser=True)
    assert not is_auditor(root)
    client = await logged_in(root)
    assert (await client.get(f"/api/feeds/{bobs_feed.pk}/")).status_code == 404
    assert await exported(client, "") == []
