from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from activity.forms import FeedPreferencesForm
from activity.models import FeedPreferences


def preferences(request):
    if request.method == "POST" and "reset" in request.POST:
        FeedPreferences.objects.filter(user=request.user).delete()
        messages.success(request, "Your feed preferences are back to the defaults.")
        return redirect("activity:preferences")
    current = FeedPreferences.prefs_for(request.user.pk)
    if request.method == "POST":
        form = FeedPreferencesForm(request.POST)
        if form.is_valid():
            FeedPreferences.objects.update_or_create(
                user=request.user, defaults={"overrides": form.changed_overrides()}
            )
            messages.success(request, "Saved. Your next question uses these preferences.")
            return redirect("activity:preferences")
    else:
        form = FeedPreferencesForm.for_prefs(current)
    return render(request, "activity/preferences.html", {"form": form})
