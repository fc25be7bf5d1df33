from __future__ import annotations

from django.urls import path

from activity import views

app_name = "activity"

urlpatterns = [
    path("preferences/", views.preferences, name="preferences"),
    path("language/", views.language, name="language"),
    path("feeds/<int:feed_id>/expanded/", views.feed_expanded, name="feed_expanded"),
]
