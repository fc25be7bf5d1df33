from __future__ import annotations

from django.urls import path

from chat.pages import inbox, views

app_name = "chat"

urlpatterns = [
    path("", views.conversation_list, name="conversation_list"),
    path("c/new/", views.conversation_new, name="conversation_new"),
    path("sidebar/", views.conversation_sidebar, name="conversation_sidebar"),
    path("inbox/", inbox.inbox, name="inbox"),
    path("inbox/badge/", inbox.inbox_badge, name="inbox_badge"),
    path("inbox/<uuid:conversation_id>/act/", inbox.inbox_act, name="inbox_act"),
    path("c/<uuid:conversation_id>/", views.conversation_detail, name="conversation_detail"),
    path("c/<uuid:conversation_id>/act/", views.conversation_act, name="conversation_act"),
    path(
        "c/<uuid:conversation_id>/rename/", views.conversation_rename, name="conversation_rename"
    ),
    path(
        "c/<uuid:conversation_id>/archive/",
        views.conversation_archive,
        name="conversation_archive",
    ),
    path(
        "c/<uuid:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"
    ),
    path(
        "c/<uuid:conversation_id>/export.<str:fmt>",
        views.conversation_export,
        name="conversation_export",
    ),
    path(
        "c/<uuid:conversation_id>/m/<int:message_id>/source.md",
        views.message_source,
        name="message_source",
    ),
    path(
        "c/<uuid:conversation_id>/m/<int:message_id>/contact/",
        views.contact_request,
        name="contact_request",
    ),
    path(
        "c/<uuid:conversation_id>/m/<int:message_id>/feedback/",
        views.answer_feedback,
        name="answer_feedback",
    ),
]
