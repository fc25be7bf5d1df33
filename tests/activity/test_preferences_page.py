from __future__ import annotations

import re

import pytest

from activity.models import FeedPreferences

pytestmark = pytest.mark.django_db

VALID = {
    "mode": "progress",
    "label_kind": "fixed",
    "label_text": "Investigating",
    "labels": "",
    "show_after": "2",
    "max_lines": "4",
    "detail": "raw",
    "tool_progress": "on",
    "line_width": "60",
    "show_usage": "on",
    "show_ratings": "on",
}


def test_the_page_shows_the_defaults(alice_client):
    page = alice_client.get("/preferences/").content.decode()
    checked = re.findall(r'<input type="radio" name="(\w+)" value="(\w+)"[^>]*checked>', page)
    assert checked == [("mode", "partial"), ("label_kind", "auto")]
    assert 'name="max_lines" value="6"' in page


def test_saving_stores_only_what_differs_from_the_defaults(alice_client, alice):
    response = alice_client.post("/preferences/", VALID)
    assert response.status_code == 302
    stored = FeedPreferences.objects.get(user=alice).overrides
    assert stored == {
        "MODE": "progress",
        "LABEL": "Investigating",
        "SHOW_AFTER": 2.0,
        "MAX_LINES": 4,
        "DETAIL": "raw",
        "LINE_WIDTH": 60,
        "SHOW_USAGE": True,
    }
    prefs = FeedPreferences.settings_for(alice.pk)[0]
    assert (prefs.mode, prefs.label, prefs.max_lines) == ("progress", "Investigating", 4)
    assert prefs.show_usage
    page = alice_client.get("/preferences/").content.decode()
    assert re.search(r'<input type="checkbox" name="show_usage"[^>]*checked', page)
    assert "Your next question uses these preferences." in page
    assert 'value="Investigating"' in page


def test_preferences_are_per_user(alice_client, alice, bob):
    alice_client.post("/preferences/", VALID)
    assert FeedPreferences.settings_for(bob.pk)[0].mode == "partial"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"mode": "loud"}, "Select a valid choice"),
        ({"max_lines": "0"}, "greater than or equal to 1"),
        ({"line_width": "5000"}, "less than or equal to 400"),
        ({"label_text": ""}, "Type the label to show"),
        ({"labels": " , , "}, "Name at least one label, or leave this empty."),
    ],
)
def test_bad_values_are_explained_and_nothing_is_saved(alice_client, alice, change, problem):
    response = alice_client.post("/preferences/", {**VALID, **change})
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not FeedPreferences.objects.filter(user=alice).exists()


def test_reset_returns_the_feed_to_the_defaults_and_keeps_the_language(alice_client, alice):
    alice_client.post("/preferences/", {**VALID, "language": "it"})
    alice_client.post("/preferences/", {"reset": "1"})
    assert FeedPreferences.objects.get(user=alice).overrides == {}
    assert FeedPreferences.settings_for(alice.pk)[0].mode == "partial"
    assert FeedPreferences.language_of(alice.pk) == "it"


def test_the_page_needs_a_login(client):
    assert client.get("/preferences/").status_code == 302


PROGRAM = {
    "program-mode": "progress",
    "program-label_kind": "fixed",
    "program-label_text": "Working",
    "program-detail": "explain",
    "program-line_width": "0",
}


def test_the_programs_section_is_saved_beside_the_pages_settings(alice_client, alice):
    page = alice_client.get("/preferences/").content.decode()
    assert re.search(r'name="program-mode" value="partial"[^>]*checked', page)
    assert re.search(r'name="program-label_kind" value="none"[^>]*checked', page)

    response = alice_client.post("/preferences/", {**VALID, **PROGRAM})

    assert response.status_code == 302
    stored = FeedPreferences.objects.get(user=alice).overrides
    assert stored["MODE"] == "progress"  # the page's, as rows before surfaces
    assert stored["program"] == {
        "MODE": "progress",
        "LABEL": "Working",
        "DETAIL": "explain",
        "TOOL_PROGRESS": False,
    }
    program = FeedPreferences.settings_for(alice.pk, "program")[0]
    assert (program.mode, program.label, program.tool_progress) == ("progress", "Working", False)
    page = alice_client.get("/preferences/").content.decode()
    assert re.search(r'name="program-mode" value="progress"[^>]*checked', page)


def test_a_form_without_the_programs_section_keeps_what_programs_were_given(alice_client, alice):
    alice_client.post("/preferences/", {**VALID, **PROGRAM})
    alice_client.post("/preferences/", {**VALID, "max_lines": "5"})
    stored = FeedPreferences.objects.get(user=alice).overrides
    assert (stored["MAX_LINES"], stored["program"]["LABEL"]) == (5, "Working")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"program-mode": "loud"}, "Select a valid choice"),
        ({"program-line_width": "-1"}, "greater than or equal to 0"),
        ({"program-line_width": "10"}, "LINE_WIDTH must be 0 (uncut) or between 20 and 400"),
        ({"program-label_text": ""}, "Type the label to show"),
    ],
)
def test_bad_program_values_are_explained_and_nothing_is_saved(
    alice_client, alice, change, problem
):
    response = alice_client.post("/preferences/", {**VALID, **PROGRAM, **change})
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not FeedPreferences.objects.filter(user=alice).exists()


def test_a_reader_chooses_rich_lines_for_the_page_and_plain_frames_for_programs(
    alice_client, alice
):
    alice_client.post(
        "/preferences/", {**VALID, "render_as": "rich", **PROGRAM, "program-render_as": "plain"}
    )
    stored = FeedPreferences.objects.get(user=alice).overrides
    assert (stored["RENDER"], stored["program"]["RENDER"]) == ("rich", "plain")
    assert FeedPreferences.settings_for(alice.pk)[0].render == "rich"
    assert FeedPreferences.settings_for(alice.pk, "program")[0].render == "plain"
    page = alice_client.get("/preferences/").content.decode()
    assert re.search(r'<option value="rich" selected>', page)


def programs_section(page: str) -> re.Match | None:
    return re.search(r'<details class="preference-group for-programs"( open)?>(.*?)</details>',
                     page, re.S)  # fmt: skip


def test_a_persons_own_settings_come_first_and_what_programs_receive_is_folded_below(
    alice_client,
):
    page = alice_client.get("/preferences/").content.decode()

    own = page.index("How the page shows the agent's work")
    folded = programs_section(page)
    assert folded and folded[1] is None  # closed
    assert own < folded.start() < page.index('<p class="actions">')  # then Save
    assert "<summary>What programs receive</summary>" in folded[2]
    # Every program setting is in the folded group, and no setting of the page is.
    names = set(re.findall(r'name="([\w-]+)"', folded[2]))
    assert names == {"program-mode", "program-label_kind", "program-label_text",
                     "program-detail", "program-tool_progress", "program-line_width",
                     "program-render_as"}  # fmt: skip
    outside = page[: folded.start()] + page[folded.end() :]
    assert 'name="program-' not in outside and 'name="max_lines"' in outside


def test_the_programs_group_opens_when_it_holds_a_mistake_and_only_then(alice_client):
    wrong_program = alice_client.post("/preferences/", {**VALID, **PROGRAM,
                                                        "program-line_width": "-1"})  # fmt: skip
    wrong_page = alice_client.post("/preferences/", {**VALID, **PROGRAM, "max_lines": "0"})

    shown = programs_section(wrong_program.content.decode())
    assert shown and shown[1] == " open" and "greater than or equal to 0" in shown[2]
    still_folded = programs_section(wrong_page.content.decode())
    assert still_folded and still_folded[1] is None


def test_a_reader_chooses_from_which_level_a_servers_log_messages_show(alice_client, alice):
    page = alice_client.get("/preferences/").content.decode()
    levels = re.findall(r'<option value="(\w+)"', page.split('name="mcp_log_level"')[1])[:8]
    assert levels == ["debug", "info", "notice", "warning", "error", "critical", "alert",
                      "emergency"]  # fmt: skip
    assert re.search(r'<option value="warning" selected>', page)

    alice_client.post("/preferences/", {**VALID, "mcp_log_level": "debug"})
    assert FeedPreferences.objects.get(user=alice).overrides["MCP_LOG_LEVEL"] == "debug"
    assert FeedPreferences.settings_for(alice.pk)[0].mcp_log_level == "debug"

    refused = alice_client.post("/preferences/", {**VALID, "mcp_log_level": "loud"})
    assert (
        refused.status_code == 200
        and "loud is not one of the available" in refused.content.decode()
    )
    assert FeedPreferences.settings_for(alice.pk)[0].mcp_log_level == "debug"  # kept
