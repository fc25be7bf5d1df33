from __future__ import annotations

from django.conf import settings
from django.contrib import messages as django_messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from activity.models import FeedPreferences
from chat import selectors, services
from chat.forms import ContactForm
from chat.recovery import dead_turns_recover


@require_GET
def conversation_list(request):
    conversations = selectors.conversations_of(request.user)[:200]
    return render(request, "chat/conversation_list.html", {"conversations": conversations})


@require_POST
def conversation_new(request):
    conversation = services.conversation_create(owner=request.user)
    return redirect(conversation)


@require_GET
def conversation_detail(request, conversation_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    dead_turns_recover(conversation=conversation)
    return render(
        request,
        "chat/conversation_detail.html",
        {
            "conversation": conversation,
            "turns": selectors.messages_with_feeds(
                conversation, FeedPreferences.prefs_for(request.user.pk)
            ),
            "max_chars": settings.GLASSBOX_MAX_MESSAGE_CHARS,
        },
    )


@require_POST
def contact_request(request, conversation_id, message_id):
    conversation = selectors.conversation_for(request.user, conversation_id)
    prefs = FeedPreferences.prefs_for(request.user.pk)
    message = selectors.answer_with_feed(conversation, message_id, prefs)
    form = ContactForm(request.POST)
    if not services.contact_form_requested(message):
        return HttpResponse("The agent did not open a contact form here.", status=400)
    if form.is_valid():
        try:
            services.contact_request_create(message=message, **form.cleaned_data)
        except services.ContactRefused as refusal:
            form.add_error(None, str(refusal))
        else:
            message.contact_sent = True
            form = None
    if not request.htmx:
        if form is not None:
            django_messages.error(request, "The contact form has errors; please try again.")
        return redirect(f"{conversation.get_absolute_url()}#{message.dom_id}")
    return render(request, "chat/_contact_form.html", {"message": message, "form": form})
