from __future__ import annotations

from django.urls import path

from chat import views

app_name = "chat"

urlpatterns = [
    path("", views.conversation_list, name="conversation_list"),
    path("c/new/", views.conversation_new, name="conversation_new"),
    path("c/<uuid:conversation_id>/", views.conversation_detail, name="conversation_detail"),
    path(
        "c/<uuid:conversation_id>/m/<int:message_id>/contact/",
        views.contact_request,
        name="contact_request",
    ),
]
