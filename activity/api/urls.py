from __future__ import annotations

from django.urls import path

from activity.api import views

urlpatterns = [
    path("feeds/", views.FeedList.as_view(), name="api-feeds"),
    path("feeds/export/", views.FeedExport.as_view(), name="api-feeds-export"),
    path("feeds/<int:pk>/", views.FeedDetail.as_view(), name="api-feed"),
    path("feeds/<int:pk>/labels/", views.FeedLabels.as_view(), name="api-feed-labels"),
]
