from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from chat import account_views

urlpatterns = [
    path("accounts/logout/", account_views.LogoutView.as_view(), name="logout"),
    path("accounts/token/", account_views.api_token, name="api_token"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("chat.api.urls")),
    path("", include("activity.urls")),
    path("", include("chat.urls")),
]
