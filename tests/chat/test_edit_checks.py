"""Edits checked before a call runs: against the tool's JSON Schema, formats included (an
e-mail address by the rule send_email runs), each refusal naming the argument at fault; and
the card's fields named for people, in the reader's language for our own tools."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from types import SimpleNamespace
from typing import cast

import mcp_types
import pytest
from django.utils import timezone, translation

from chat.agent.mcp.connections import Connection
from chat.agent.mcp.tools import McpTool
from chat.asks.approval_cards import card_fields, card_of, humanized, with_refusal
from chat.asks.receipts import EditRefused, Edits, edited_arguments
from chat.tools.email import SEND_EMAIL

EMAIL = SEND_EMAIL.schema["function"]["parameters"]
ASKED = {
    "feedback_to_user": "Writing to the advisor",
    "to": "advisor@example.com",
    "subject": "Tuesday",
    "body": "Can we meet on Tuesday?",
}


def refusal(edits: Edits, parameters=EMAIL, asked=ASKED) -> EditRefused:
    with pytest.raises(EditRefused) as refused:
        edited_arguments(parameters, asked, edits)
    return refused.value


@pytest.mark.parametrize("to", ["not-an-address", "advisor@", "@example.com", "a@b@c", "x@y"])
def test_an_address_that_is_not_one_is_refused_naming_its_argument(to):
    for edits in (Edits(ASKED | {"to": to}), Edits({"to": to, "subject": "S", "body": "B"}, True)):
        refused = refusal(edits)
        assert (refused.field, refused.problem) == ("to", "Enter a valid email address.")
        assert (
            str(refused) == "The edited argument “to” is not valid: Enter a valid email address."
        )
        assert refused.status == 400


def test_fine_edits_are_accepted_and_edits_that_change_nothing_are_none():
    edited = edited_arguments(EMAIL, ASKED, Edits(ASKED | {"to": "dean@exämple.com"}))
    assert edited == ASKED | {"to": "dean@exämple.com"}
    typed = {"to": "dean@example.com", "subject": "Tuesday", "body": "Ten?\nOr eleven?"}
    # A form's fields: the model's feedback line comes along as it asked it.
    assert edited_arguments(EMAIL, ASKED, Edits(typed, from_form=True)) == ASKED | typed
    assert edited_arguments(EMAIL, ASKED, Edits(ASKED)) is None
    shown = {k: v for k, v in ASKED.items() if k != "feedback_to_user"}
    assert edited_arguments(EMAIL, ASKED, Edits(shown, from_form=True)) is None


def test_a_missing_or_emptied_required_argument_is_named():
    missing = refusal(Edits({k: v for k, v in ASKED.items() if k != "subject"}))
    emptied = refusal(Edits({"to": "a@example.com", "subject": "", "body": "B"}, True))
    for refused in (missing, emptied):
        assert (refused.field, refused.problem) == ("subject", "This field is required.")


def test_an_argument_the_tool_does_not_have_is_named():
    for edits in (Edits(ASKED | {"cc": "me@example.com"}), Edits({"cc": "x"}, from_form=True)):
        refused = refusal(edits)
        assert (refused.field, str(refused)) == ("cc", "This tool has no argument “cc”.")


def test_a_nested_value_names_the_argument_it_is_in():
    parameters = {
        "type": "object",
        "properties": {
            "contact": {"type": "object", "properties": {"email": {"format": "email"}}},
        },
    }
    refused = refusal(Edits({"contact": {"email": "nobody"}}), parameters, {})
    assert refused.field == "contact"
    assert str(refused) == (
        "The edited argument “contact.email” is not valid: Enter a valid email address."
    )


@pytest.mark.parametrize(
    "format, wrong, right",
    [
        ("date", "2025-02-30", "2025-02-28"),
        ("uuid", "not-a-uuid", "2094adf6-7a1d-4bc7-81cc-03d2e4705eab"),
        ("ipv4", "300.1.1.1", "10.0.0.1"),
        ("idn-email", "nobody", "ana@exämple.com"),
    ],
)
def test_formats_are_checked_with_no_extra_package(format, wrong, right):
    parameters = {"type": "object", "properties": {"value": {"type": "string", "format": format}}}
    assert refusal(Edits({"value": wrong}), parameters, {}).field == "value"
    assert edited_arguments(parameters, {}, Edits({"value": right})) == {"value": right}


def test_a_pattern_format_is_not_compiled():
    """jsonschema's `regex` format compiles the owner's text: a deeply nested one would raise
    a RecursionError it does not catch. It is left unchecked, as formats it cannot check."""
    parameters = {"type": "object", "properties": {"value": {"type": "string", "format": "regex"}}}
    nested = "(" * 5000 + ")" * 5000
    assert edited_arguments(parameters, {}, Edits({"value": nested})) == {"value": nested}


def test_an_address_of_any_length_is_checked_in_bounded_time():
    """Django's rule refuses more than 320 characters before its patterns run; below that,
    the patterns have one way to match each text."""
    shapes = ["a" * 1_000_000 + "@", "a@" + "b." * 500_000, "a@" + "-" * 250, "a." * 159 + "@x"]
    for to in shapes:
        started = time.thread_time()  # CPU time: a loaded machine's pauses are not counted
        assert refusal(Edits(ASKED | {"to": to})).field == "to"
        assert time.thread_time() - started < 0.5, len(to)


def test_a_form_changes_only_what_it_shows():
    """Arguments the tool's parameters do not list (a server that allows more) are not on
    the form: they run as the model asked them."""
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    asked = {"city": "Rome", "units": "metric"}
    edited = edited_arguments(parameters, asked, Edits({"city": "Milan"}, from_form=True))
    assert edited == {"city": "Milan", "units": "metric"}


def test_parameters_are_labelled_for_people():
    assert [humanized(n) for n in ("to", "body", "max_results", "maxResults", "userID")] == [
        "To", "Body", "Max results", "Max results", "User ID"
    ]  # fmt: skip
    parameters = {
        "type": "object",
        "properties": {"q": {"type": "string", "title": "Search for"}, "page_size": {}},
    }
    fields = card_fields(parameters, {}, translated=False, prefix="f-")
    assert [(f.label, f.dom_id) for f in fields] == [("Search for", "f-1"), ("Page size", "f-2")]


def test_the_email_is_shown_under_our_labels_in_the_readers_language_its_body_on_many_lines():
    with translation.override("it"):
        fields = card_fields(EMAIL, ASKED, translated=True, prefix="f-")
    assert [(f.name, f.label, f.multiline) for f in fields] == [
        ("to", "A", False), ("subject", "Oggetto", False), ("body", "Messaggio", True)
    ]  # fmt: skip
    assert fields[0].description == "L'indirizzo email del destinatario."
    # A long or multi-line value gets a box of its own, whatever its schema.
    plain = {"type": "object", "properties": {"note": {"type": "string"}}}
    (short,) = card_fields(plain, {"note": "ok"}, translated=False, prefix="f-")
    (long,) = card_fields(plain, {"note": "a\nb"}, translated=False, prefix="f-")
    assert (short.multiline, long.multiline) == (False, True)


def a_waiting_call(**fields) -> SimpleNamespace:
    row = {
        "answer_id": 7, "answer": SimpleNamespace(conversation_id=uuid.uuid4()),
        "call_id": "call_1", "tool": "send_email", "title": "", "arguments": ASKED,
        "fingerprint": "sha256:" + "0" * 64, "deadline": timezone.now() + timedelta(minutes=5),
        "parameters": EMAIL,
    }  # fmt: skip
    return SimpleNamespace(**row | fields)


def test_the_card_names_the_tool_by_its_title():
    with translation.override("zh-hant"):
        assert card_of(a_waiting_call()).title == "寄送電子郵件"
    # An MCP tool's title is the server's, as it was when the call asked.
    mcp = a_waiting_call(tool="crm__update", title="Update a <b>record</b>", parameters=None)
    assert card_of(mcp).title == "Update a <b>record</b>"
    assert card_of(a_waiting_call(tool="crm__update", parameters=None)).title == "crm__update"


def test_an_mcp_tool_is_titled_as_mcp_ranks_its_names():
    def title(**named) -> str:
        remote = mcp_types.Tool(name="update_record", input_schema={"type": "object"}, **named)
        # A title reads only its server's name: a connection would open itself.
        crm = cast(Connection, SimpleNamespace(spec=SimpleNamespace(name="crm")))
        return McpTool(crm, remote).title

    hinted = mcp_types.ToolAnnotations(title="Update (hint)")
    assert title(title="Update a record", annotations=hinted) == "Update a record"
    assert title(annotations=hinted) == "Update (hint)"
    assert title() == "update_record"


def test_a_refused_edit_keeps_what_was_typed_and_says_why_under_that_field():
    typed = {"to": "not-an-address", "subject": "Thursday", "body": "Line one\nLine two"}
    edits = Edits(typed, from_form=True)
    card = with_refusal(card_of(a_waiting_call()), edits, refusal(edits))
    assert card.editing and card.problem == "" and card.focus == "to"
    assert [(f.value, f.error) for f in card.fields] == [
        ("not-an-address", "Enter a valid email address."), ("Thursday", ""),
        ("Line one\nLine two", ""),
    ]  # fmt: skip
    # A refusal about no field the card shows is said above the fields.
    stray = Edits({"cc": "x"}, from_form=True)
    card = with_refusal(card_of(a_waiting_call()), stray, refusal(stray))
    assert card.problem == "This tool has no argument “cc”." and card.focus == "to"
