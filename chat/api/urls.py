from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from chat.api import views

urlpatterns = [
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
    path("feeds/", views.FeedList.as_view(), name="api-feeds"),
    path("feeds/export/", views.FeedExport.as_view(), name="api-feeds-export"),
    path("feeds/<int:pk>/", views.FeedDetail.as_view(), name="api-feed"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
