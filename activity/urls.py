from __future__ import annotations

from django.urls import path

from activity import views

app_name = "activity"

urlpatterns = [
    path("preferences/", views.preferences, name="preferences"),
    path("language/", views.language, name="language"),
    path("feeds/<int:feed_id>/opened/", views.feed_opened, name="feed_opened"),
]
