from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from activity.models import ActivityFeed, FeedPreferences
from activity.preferences.feed_prefs import PROGRAM_KEY
from activity.preferences.forms import FeedPreferencesForm, ProgramPreferencesForm
from activity.selectors import reader_settings
from project.languages import supported


@require_POST
def feed_expanded(request, feed_id: int):
    """The page's beacon when its user expands a folded feed: counted, nothing else kept."""
    if not ActivityFeed.record_opened(feed_id=feed_id, owner=request.user):
        raise Http404(_("You have no finished feed with that id."))
    return HttpResponse(status=204)


def preferences(request):
    if request.method == "POST" and "reset" in request.POST:
        # The language is not a feed setting: it stays as chosen.
        FeedPreferences.objects.filter(user=request.user).update(overrides={})
        messages.success(request, _("Your feed preferences are back to the defaults."))
        return redirect("activity:preferences")
    current, language = reader_settings(request)
    stored = FeedPreferences.objects.filter(user=request.user).values_list("overrides", flat=True)
    saved = stored.first() or {}
    if request.method == "POST":
        form = FeedPreferencesForm(request.POST)
        posted = ProgramPreferencesForm.posted(request.POST)
        program = ProgramPreferencesForm(request.POST) if posted else _program_form(saved)
        if form.is_valid() and (not posted or program.is_valid()):
            chosen = form.cleaned_data["language"]
            for_programs = program.changed_overrides() if posted else saved.get(PROGRAM_KEY)
            overrides = form.changed_overrides()
            if for_programs:
                overrides[PROGRAM_KEY] = for_programs
            FeedPreferences.objects.update_or_create(
                user=request.user, defaults={"overrides": overrides, "language": chosen}
            )
            # The message is read on the next page, so it speaks the language chosen now.
            with translation.override(chosen or translation.get_language()):
                messages.success(request, _("Saved. Your next question uses these preferences."))
            return _remember(redirect("activity:preferences"), chosen)
    else:
        form = FeedPreferencesForm.for_prefs(current, language)
        program = _program_form(saved)
    return render(request, "activity/preferences.html", {"form": form, "program": program})


def _program_form(saved: dict) -> ProgramPreferencesForm:
    return ProgramPreferencesForm.for_prefs(FeedPreferences.settings_of(saved, "", "program")[0])


@login_not_required
@require_POST
def language(request):
    """The page's language switcher: saved for a logged-in user, a cookie for anyone."""
    chosen = supported(request.POST.get("language", ""))
    if not chosen:
        return HttpResponse(_("Glassbox does not speak that language."), status=400)
    if request.user.is_authenticated:
        FeedPreferences.objects.update_or_create(user=request.user, defaults={"language": chosen})
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = "/"
    return _remember(redirect(target), chosen)


def _remember(response, language: str):
    """The cookie keeps the choice on the login page too; none follows the browser."""
    if language:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
            secure=settings.SESSION_COOKIE_SECURE,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
    return response
