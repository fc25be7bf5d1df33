from __future__ import annotations

from django.urls import path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from chat.api import views

# Swagger UI styles itself inline; its script is served as a file (the split view).
docs = csp_override(
    {
        "default-src": [CSP.SELF],
        "script-src": [CSP.SELF],
        "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
        "img-src": [CSP.SELF, "data:"],
    }
)(SpectacularSwaggerSplitView.as_view(url_name="api-schema"))

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
    path("docs/", docs, name="api-docs"),
]
