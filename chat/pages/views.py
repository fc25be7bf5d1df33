from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib import messages as flash
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from activity.selectors import reader_settings
from chat import turns
from chat.api.serializers import ConversationDetailSerializer
from chat.asks.cards import cards_for, question_cards_for, refused_card
from chat.conversations import selectors, services, sidebar
from chat.conversations.exports import conversation_markdown
from chat.models import Message
from chat.pages import starters
from chat.pages.forms import ContactForm
from chat.pages.list_pages import ListPage
from chat.turns import actions, broadcast
from chat.turns.recovery import dead_turns_recover
from project.text_rules import unstorable


@require_GET
def conversation_list(request):
    query = request.GET.get("q", "").strip()[:200]
    archived = request.GET.get("archived") == "1"
    problem = unstorable(query)
    if problem:
        flash.error(request, problem)
        return redirect(f"{reverse('chat:conversation_list')}?archived=1" if archived else "/")
    conversations = selectors.conversations_of(request.user, archived=archived, query=query)
    number = min(_message_id(request.GET.get("page")) or 1, 1_000_000)
    page = ListPage.of(conversations, number, request.GET.get("after"))
    if query:
        sidebar.with_snippets(page.rows, query)
    more = ""
    if page.has_next:
        params = {
            "page": page.number + 1,
            "after": page.after,
            "q": query,
            "archived": int(archived),
        }
        more = urlencode({k: v for k, v in params.items() if v})
    context = {"page": page, "query": query, "archived": archived, "more": more}
    if request.htmx and page.number > 1:
        return render(request, "chat/_conversation_rows.html", context)
    return render(request, "chat/conversation_list.html", context)


@require_http_methods(["GET", "POST"])
def conversation_new(request):
    """A new conversation's page, which stores nothing: the conversation is made when its
    first question is sent here (a starter or the composer), and that question's turn runs
    at once on the conversation's own page. A refused question makes nothing."""
    if request.method == "GET":
        return _new_page(request)
    form = request.POST
    try:
        action = actions.read({key: form.get(key) for key in form})
        if not isinstance(action, actions.Ask):
            raise actions.Unreadable(_("A new conversation starts with a question."))
    except actions.Unreadable as problem:
        flash.error(request, str(problem))
        return _new_page(request, draft=form.get("message", ""), status=400)
    conversation = services.conversation_create(owner=request.user)
    try:
        async_to_sync(actions.perform)(
            action, conversation=conversation, user=request.user, language=request.LANGUAGE_CODE
        )
    except turns.TurnRejected as refusal:
        services.conversation_discard(conversation=conversation)
        flash.error(request, str(refusal))
        return _new_page(request, draft=form.get("message", ""), status=refusal.status)
    return redirect(conversation)


def _new_page(request, *, draft: str = "", status: int = 200):
    context = {
        "draft": draft,
        "max_chars": settings.GLASSBOX_MAX_MESSAGE_CHARS,
        "starters": starters.for_page(),
        "sidebar": _sidebar_context(request, current=None),
    }
    return render(request, "chat/conversation_new.html", context, status=status)


SIDEBAR_SIZE = 50


def _sidebar_context(request, *, current, query: str = "") -> dict[str, Any]:
    """The sidebar's conversations: by day, or ranked by the search with snippets."""
    found = selectors.conversations_of(request.user, query=query)
    shown = list(found[: SIDEBAR_SIZE + 1])
    more, shown = len(shown) > SIDEBAR_SIZE, shown[:SIDEBAR_SIZE]
    context: dict[str, Any] = {"current": current, "query": query, "more": more}
    if query:
        sidebar.with_snippets(shown, query)
        context["groups"] = [sidebar.Group(_("Results"), shown)] if shown else []
    else:
        context["groups"] = sidebar.by_day(shown)
    return context


@require_GET
def conversation_sidebar(request):
    """The sidebar's list alone, for its search and its live updates."""
    query = request.GET.get("q", "").strip()[:200]
    if unstorable(query):
        query = ""
    current = request.GET.get("current", "")
    context = _sidebar_context(request, current=current, query=query)
    return render(request, "chat/_sidebar_list.html", context)


@require_GET
def conversation_detail(request, conversation_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    return _conversation_page(request, conversation)


def _conversation_page(request, conversation, *, draft: str = "", status: int = 200, refused=None):
    dead_turns_recover(conversation_id=conversation.pk)
    prefs = reader_settings(request).feed
    before = _message_id(request.GET.get("before"))
    history = selectors.messages_with_feeds(
        conversation, prefs, before=before, starting_at=_message_id(request.GET.get("from"))
    )
    # The answer whose approval card shows its arguments to change (its Change link).
    changing = _message_id(request.GET.get("change"))
    editing = changing is not None or refused is not None
    context = {
        "conversation": conversation,
        "turns": history.messages,
        "earlier": history.earlier,
        "max_chars": settings.GLASSBOX_MAX_MESSAGE_CHARS,
        "draft": draft,
        # Without JavaScript the page reloads itself while an answer is being written, but
        # not under someone changing a call's arguments: that would wipe what they type.
        "refresh_url": "" if editing else _refresh_url(request, history.messages),
        # The approval cards of waiting answers: the one whose Change link was followed with
        # its fields open, or as a refused edit left it.
        "cards": cards_for(history.messages, editing=changing, refused=refused),
        # MCP servers' questions waiting for an answer (answered here too without JavaScript).
        "questions": question_cards_for(conversation.pk),
        "starters": starters.for_page(),
        "sidebar": _sidebar_context(request, current=str(conversation.pk)),
    }
    if before is not None and request.htmx:
        return render(request, "chat/_earlier_turns.html", context)
    return render(request, "chat/conversation_detail.html", context, status=status)


@require_POST
def conversation_act(request, conversation_id):
    """The page's forms without JavaScript or a socket, by POST: the same fields as the
    socket's messages, read and carried out by the same code (chat.turns.actions); then the
    conversation page again (never a GET that carries a question). A refusal comes back on
    the page with the question still in the box."""
    conversation = selectors.conversation_for(request.user, conversation_id)
    try:
        action = actions.read_posted(request.POST)
        if isinstance(action, actions.Resume):
            raise actions.Unreadable(_("Resume is for the socket."))
        done = async_to_sync(actions.perform)(
            action, conversation=conversation, user=request.user, language=request.LANGUAGE_CODE
        )
    except actions.Unreadable as problem:
        return _refused(request, conversation, str(problem), 400)
    except turns.EditRefused as refusal:
        assert isinstance(action, actions.Decide)  # only a decision carries edits
        card = refused_card(conversation.pk, action.call_id, action.edits, refusal)
        return _refused(request, conversation, str(refusal), refusal.status, card)
    except turns.TurnRejected as refusal:
        return _refused(request, conversation, str(refusal), refusal.status)
    anchor = f"#m-{done.answer.pk}" if isinstance(done, turns.StartedTurn) else ""
    return redirect(conversation.get_absolute_url() + anchor)


def _message_id(value: str | None) -> int | None:
    # isdigit() alone admits "²", which int() refuses; ids fit in 18 digits (a 64-bit key).
    return (
        int(value) if value and value.isascii() and value.isdigit() and len(value) <= 18 else None
    )


def _refresh_url(request, messages) -> str:
    """Where the no-JS page's refresh goes while a turn is open, else ''. Each refresh names
    a new address: a browser takes a refresh to its own address with a #fragment for a jump
    within the page (Chromium reloads nothing), and the fragment keeps the answer in view."""
    open_turn = next((m for m in messages if getattr(m, "state", "") in Message.OPEN_STATES), None)
    if open_turn is None:
        return ""
    count = (_message_id(request.GET.get("refresh")) or 0) % 1_000_000 + 1
    return f"{request.path}?refresh={count}#{open_turn.dom_id}"


def _refused(request, conversation, text: str, status: int, card=None):
    flash.error(request, text)
    draft = request.POST.get("message", "")
    return _conversation_page(request, conversation, draft=draft, status=status, refused=card)


@require_POST
def conversation_rename(request, conversation_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    try:
        services.conversation_rename(
            conversation=conversation, title=request.POST.get("title", "")
        )
    except services.TitleInvalid as problem:
        if request.htmx:
            # htmx swaps no 4xx answer: the unchanged title comes back with the reason.
            context = {"conversation": conversation, "problem": str(problem)}
            return render(request, "chat/_title_refused.html", context)
        flash.error(request, str(problem))
    else:
        _conversations_changed(request.user, conversation)
    if request.htmx:
        return render(request, "chat/_title.html", {"conversation": conversation})
    return redirect(conversation)


def _conversations_changed(user, conversation) -> None:
    """The user's other pages refresh their sidebars (chat.turns.broadcast)."""
    async_to_sync(broadcast.send_conversations_changed)(user.pk, conversation.pk)


@require_POST
def conversation_archive(request, conversation_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    archived = request.POST.get("archived") == "1"
    services.conversation_archive(conversation=conversation, archived=archived)
    _conversations_changed(request.user, conversation)
    if archived:
        flash.success(request, _("“%(title)s” is archived.") % {"title": conversation})
    else:
        flash.success(
            request, _("“%(title)s” is back in your conversations.") % {"title": conversation}
        )
    return redirect("chat:conversation_list")


@require_http_methods(["GET", "POST"])
def conversation_delete(request, conversation_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    if request.method == "GET":
        context = {
            "conversation": conversation,
            "retention_days": settings.GLASSBOX_RETENTION_DAYS,
        }
        return render(request, "chat/conversation_delete.html", context)
    services.conversation_delete(conversation=conversation)
    _conversations_changed(request.user, conversation)
    flash.success(request, _("“%(title)s” was deleted.") % {"title": conversation})
    return redirect("chat:conversation_list")


@require_GET
def conversation_export(request, conversation_id, fmt):
    if fmt not in {"md", "json"}:
        raise Http404(_("Conversations download as .md or .json."))
    conversation = selectors.conversation_for(request.user, conversation_id)
    name = slugify(conversation.display_title)[:60] or "conversation"
    if fmt == "md":
        prefs = reader_settings(request).feed
        whole = selectors.messages_with_feeds(conversation, prefs, starting_at=0).messages
        body = conversation_markdown(conversation, whole)
        response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    else:
        context = {"messages": selectors.message_records(conversation)}
        data = ConversationDetailSerializer(conversation, context=context).data
        body = json.dumps(data, ensure_ascii=False, indent=2, default=str)
        response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@require_GET
def message_source(request, conversation_id, message_id):
    """An answer's Markdown as the model wrote it, for the page's Copy button."""
    conversation = selectors.conversation_for(request.user, conversation_id)
    content = (
        conversation.messages.filter(pk=message_id, role="assistant")
        .values_list("content", flat=True)
        .first()
    )
    if content is None:
        raise Http404(_("This conversation has no such answer."))
    response = HttpResponse(content, content_type="text/markdown; charset=utf-8")
    response["Cache-Control"] = "private, no-store"
    return response


@require_POST
def contact_request(request, conversation_id, message_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    prefs = reader_settings(request).feed
    message = selectors.answer_with_feed(conversation, message_id, prefs)
    form = ContactForm(request.POST)
    if not message.contact_form_requested:
        return HttpResponse(_("The agent did not open a contact form here."), status=400)
    sent = False
    if form.is_valid():
        try:
            services.contact_request_create(message=message.message, **form.cleaned_data)
        except services.ContactRefused as refusal:
            form.add_error(None, str(refusal))
        else:
            message.contact_sent = sent = True
    if not request.htmx:
        if not sent:
            flash.error(request, _("The contact form has errors; please try again."))
        return redirect(f"{conversation.get_absolute_url()}#{message.dom_id}")
    # Once sent, the page shows that it was, in place of the form.
    shown = None if sent else form
    return render(request, "chat/_contact_form.html", {"message": message, "form": shown})


@require_POST
def answer_feedback(request, conversation_id, message_id):
    """The asker's 👍/👎 (and note) on an answer or one of its tool calls, read as the API
    reads it. Without JavaScript the page comes back at the answer; with htmx, the rating's
    own form, pressed."""
    conversation = selectors.conversation_for(request.user, conversation_id)
    prefs = reader_settings(request).feed
    message = selectors.answer_with_feed(conversation, message_id, prefs)
    target = ""
    try:
        rate = actions.read_posted_rating(request.POST)
        target = rate.call_id
        services.answer_rate(
            user=request.user,
            answer=message.message,
            rating=rate.rating,
            note=rate.note,
            call_id=rate.call_id,
        )
    except (actions.Unreadable, services.RatingRefused) as refused:
        if not request.htmx:
            flash.error(request, str(refused))
            return redirect(f"{conversation.get_absolute_url()}#{message.dom_id}")
        # The form again with the reason and the note as typed (htmx swaps a 200 only).
        typed = request.POST.get("note", "")
        target = request.POST.get("call_id", "")
        context = {"ratings": message.ratings, "target": target, "error": str(refused)}
        return render(request, "chat/_rating.html", context | {"typed_note": typed})
    if not request.htmx:
        return redirect(f"{conversation.get_absolute_url()}#{message.dom_id}")
    message = selectors.answer_with_feed(conversation, message_id, prefs)
    context = {"ratings": message.ratings, "target": target, "saved": True}
    return render(request, "chat/_rating.html", context)
