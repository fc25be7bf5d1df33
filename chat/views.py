from __future__ import annotations

from django.conf import settings
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chat import selectors, services


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
    return render(
        request,
        "chat/conversation_detail.html",
        {
            "conversation": conversation,
            "messages": selectors.messages_with_feeds(conversation),
            "max_chars": settings.GLASSBOX_MAX_MESSAGE_CHARS,
        },
    )
