from __future__ import annotations

from django.urls import path

from chat.api import standard_streams, views

urlpatterns = [
    path("inbox/", views.Inbox.as_view(), name="api-inbox"),
    # Beside activity's feeds/ (project/urls.py includes these first): it reads chat's answers.
    path("feeds/dataset/", views.Dataset.as_view(), name="api-feeds-dataset"),
    path("conversations/", views.ConversationList.as_view(), name="api-conversations"),
    path(
        "conversations/<uuid:conversation_id>/",
        views.ConversationDetail.as_view(),
        name="api-conversation",
    ),
    path(
        "conversations/<uuid:conversation_id>/messages/",
        views.TurnCreate.as_view(),
        name="api-turns",
    ),
    path(
        "conversations/<uuid:conversation_id>/messages/<int:message_id>/agui/",
        standard_streams.AguiStream.as_view(),
        name="api-turn-agui",
    ),
    path(
        "conversations/<uuid:conversation_id>/messages/<int:message_id>/ui-stream/",
        standard_streams.UiMessageStream.as_view(),
        name="api-turn-ui-stream",
    ),
    path(
        "conversations/<uuid:conversation_id>/messages/<int:message_id>/feedback/",
        views.AnswerFeedback.as_view(),
        name="api-answer-feedback",
    ),
    path(
        "conversations/<uuid:conversation_id>/approvals/<str:call_id>/",
        views.ApprovalDecide.as_view(),
        name="api-approval",
    ),
]
