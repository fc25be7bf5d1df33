"""Auditors label tool calls in the admin: a label from GLASSBOX_SCORE_LABELS and a note,
sealed into the call's feed; the tool calls filter by label, rating, model, tool and period,
and the dashboard shows calls, 👎 rate and labels per tool and per model, and labels per day
as a chart."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from activity.admin import LABEL_COLOURS
from activity.models import ActivityEvent, ActivityFeed
from activity.recording.events import Score
from chat.conversations.services import answer_rate
from chat.models import Conversation, Message
from tests.support.audit import verify
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def call(alice, knowledge_base) -> ActivityEvent:
    """The search's result row, as the admin's tool call list has it; rated 👎 by alice."""
    answer = run_turn(Conversation.objects.create(owner=alice), "How do I negotiate my salary?")
    result = ActivityEvent.objects.get(feed=answer.feed_id, kind="tool_result")
    answer_rate(user=alice, answer=answer, rating="down", call_id=result.call_id)
    return result


def label_url(call: ActivityEvent) -> str:
    return f"/admin/activity/toolcallrecord/{call.pk}/label/"


def scores_of(call: ActivityEvent) -> list[Score]:
    rows = ActivityEvent.objects.filter(feed=call.feed_id, kind="score", call_id=call.call_id)
    return [e for row in rows.order_by("seq") if isinstance(e := row.to_event(), Score)]


def test_an_auditor_labels_a_call_and_the_label_is_sealed_in_its_feed(admin_client, call):
    page = admin_client.get(f"/admin/activity/toolcallrecord/{call.pk}/change/").content.decode()
    assert 'class="label-form"' in page and '<option value="wrong arguments">' in page

    posted = admin_client.post(label_url(call), {"label": "wrong arguments", "note": "too vague"})

    assert posted.status_code == 302
    label = scores_of(call)[-1]
    assert (label.label, label.note, label.value, label.by) == (
        "wrong arguments",
        "too vague",
        "",
        "admin",
    )
    page = admin_client.get(posted["Location"]).content.decode()
    assert "Labelled “wrong arguments”." in page and "too vague" in page
    status, out = verify()
    assert status == 0, out


def test_a_label_not_in_the_list_is_refused_and_nothing_is_recorded(admin_client, call):
    posted = admin_client.post(label_url(call), {"label": "brilliant", "note": ""})

    assert posted.status_code == 302
    assert "brilliant is not one of the available choices" in (
        admin_client.get(posted["Location"]).content.decode()
    )
    assert [s.label for s in scores_of(call)] == [""]


def test_staff_without_the_audit_permission_cannot_label(client, call):
    staff = get_user_model().objects.create_user("clerk", password="x", is_staff=True)
    client.force_login(staff)

    posted = client.post(label_url(call), {"label": "unsafe"})

    assert posted.status_code == 403
    assert [s.label for s in scores_of(call)] == [""]


@pytest.mark.parametrize(
    ("query", "listed"),
    [
        ("label=unsafe", True),
        ("label=correct", False),
        ("rating=down", True),
        ("rating=up", False),
        ("tool=search_documents&label=unsafe", True),
        ("model=another-model", False),
    ],
)
def test_tool_calls_filter_by_label_rating_tool_and_model(admin_client, call, query, listed):
    admin_client.post(label_url(call), {"label": "unsafe", "note": ""})

    page = admin_client.get(f"/admin/activity/toolcallrecord/?{query}").content.decode()

    assert (f">feed {call.feed_id}</a>" in page) is listed
    if listed:
        assert "👎" in page and "unsafe" in page


def test_tool_calls_filter_by_the_model_that_answered(admin_client, call):
    model = ActivityFeed.objects.get(pk=call.feed_id).model

    page = admin_client.get(f"/admin/activity/toolcallrecord/?model={model}").content.decode()

    assert model and f">feed {call.feed_id}</a>" in page


def test_the_dashboard_shows_the_down_rate_and_labels_per_tool_model_and_day(admin_client, call):
    admin_client.post(label_url(call), {"label": "unsafe", "note": ""})
    # Alice changes her mind: her latest rating counts.
    answer = Message.objects.get(feed_id=call.feed_id)
    answer_rate(user=answer.conversation.owner, answer=answer, rating="up", call_id=call.call_id)
    answer_rate(user=answer.conversation.owner, answer=answer, rating="down", call_id=call.call_id)

    page = admin_client.get("/admin/activity/activityfeed/dashboard/").content.decode()

    per_tool = page.split('class="scores-per-tool"')[1].split("</table>")[0]
    row = re.search(r"<tr><td>search_documents</td>(.*?)</tr>", per_tool, re.DOTALL)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row.group(1), re.DOTALL)
    assert cells[:4] == ["1", "1", "100 %", "unsafe: 1"]
    # Over time: today's column is a full bar of calls, all of it 👎, over unsafe's colour.
    (today,) = re.findall(r'<g class="trend-day">(.*?)</g>', cells[4], re.DOTALL)
    assert "1 call, 1 👎 of 1 rated, unsafe 1</title>" in today
    assert re.search(r'class="down" x="\d+" y="0" width="3" height="28"', today)
    unsafe = list(settings.GLASSBOX_SCORE_LABELS).index("unsafe")
    assert f'fill="{LABEL_COLOURS[unsafe]}"' in today.split('class="label"')[1]
    per_model = page.split('class="scores-per-model"')[1].split("</table>")[0]
    assert per_model.count('<g class="trend-day">') == 1
    chart = page.split('class="labels-chart"')[1].split("</svg>")[0]
    assert chart.count("<rect") == 1 and "unsafe 1" in chart
