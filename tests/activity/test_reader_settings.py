"""A reader's settings (how the feed is shown, and the saved language) are read once per
request, shared by the language middleware and the page, and never by the next request."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from activity.models import FeedPreferences
from activity.selectors import reader_settings

pytestmark = pytest.mark.django_db


def test_one_request_reads_them_once_and_the_next_reads_them_again(
    alice, django_assert_num_queries
):
    FeedPreferences.objects.create(user=alice, overrides={"max_lines": 4}, language="it")
    request = RequestFactory().get("/")
    request.user = alice
    with django_assert_num_queries(1):
        first, again = reader_settings(request), reader_settings(request)
    assert first is again
    assert (first.feed.max_lines, first.language) == (4, "it")

    FeedPreferences.objects.filter(user=alice).update(language="zh-hant")
    later = RequestFactory().get("/")
    later.user = alice
    assert reader_settings(later).language == "zh-hant"


def test_a_reader_who_saved_nothing_has_the_defaults_and_the_browsers_language(alice):
    request = RequestFactory().get("/")
    request.user = alice
    feed, language = reader_settings(request)
    assert (feed.max_lines, language) == (6, "")
