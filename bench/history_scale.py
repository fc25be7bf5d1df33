"""A history of real size (bench/history_data.py: a user with 10,000 conversations, 1,000,000
events across users), measured where it is kept: the history page and the sidebar, search
with snippets, one feed's export, the whole export (peak memory, in a process of its own),
verify_audit (events a second) and the admin dashboard. Times are of the Django test client
in this process (view, queries, template), p50 / p95 over ROUNDS requests.

    DATABASE_URL=postgres://… .venv/bin/python bench/history_data.py   # once
    DATABASE_URL=postgres://… .venv/bin/python bench/history_scale.py [pages admin export audit]"""

from __future__ import annotations

import asyncio
import html
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import machine, percentile, report

ROUNDS = 20
# A word most conversations hold, one about one in seven holds, two words, and one none
# holds.
SEARCHES = ("salary", "dedicated", "interview dedicated", "zzzyzx")


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
    import django

    django.setup()


def timed(get: Callable[[], object], rounds: int = ROUNDS) -> str:
    get()  # warm: templates compiled, plans cached
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        get()
        times.append((time.perf_counter() - started) * 1000)
    p50, p95 = statistics.median(times), percentile(times, 95)
    return f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"


def shown(rows: list[tuple[str, str]], label: str, value: str) -> None:
    """Keeps the row and prints it now: a slow figure shows before the rest."""
    rows.append((label, value))
    print(f"  {label:<52} {value}", flush=True)


def queries_of(get: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        get()
    return len(captured)


def ok(client, url: str) -> Callable[[], object]:
    def get() -> object:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return response

    return get


def linked_page(client, number: int) -> str:
    """The address of the list's page `number` as scrolling reaches it: each page's "More
    conversations" link, followed."""
    url = "/"
    for _ in range(number - 1):
        page = client.get(url, headers={"HX-Request": "true"}).content.decode()
        link = re.search(r'<li class="more"><a href="([^"]+)"', page)
        assert link is not None, url
        url = "/" + html.unescape(link.group(1))
    return url


def pages() -> list[tuple[str, str]]:
    from django.contrib.auth.models import User
    from django.db.models import Count
    from django.test import Client

    from activity.models import ActivityEvent
    from chat.models import Conversation

    user = User.objects.get(username="history")
    client = Client()
    client.force_login(user)
    conversations = Conversation.objects.filter(owner=user)
    latest = conversations.order_by("-updated_at").first()
    longest = (
        conversations.annotate(n=Count("messages")).order_by("-n").values_list("pk", flat=True)[0]
    )
    assert latest is not None
    rows = [
        ("conversations of the user", f"{conversations.count():,}"),
        ("events, all users", f"{ActivityEvent.objects.count():,}"),
    ]
    for label, url in (
        ("history page (/)", "/"),
        ("history page, page 50 (its link, after page 49's last row)", linked_page(client, 50)),
        ("history page, page 50 (a bare ?page=50: rows skipped)", "/?page=50"),
        ("sidebar (/sidebar/)", "/sidebar/"),
        ("a conversation's page (with the sidebar)", f"/c/{longest}/"),
    ):
        get = ok(client, url)
        shown(rows, label, f"{timed(get)}, {queries_of(get)} queries")
    for words in SEARCHES:
        for label, url in (("search", "/?q="), ("sidebar search", "/sidebar/?q=")):
            get = ok(client, url + words.replace(" ", "+"))
            shown(rows, f"{label} {words!r}", f"{timed(get)}, {queries_of(get)} queries")
    feed_id = latest.messages.filter(feed__isnull=False).values_list("feed_id", flat=True)[0]
    get = ok(client, f"/api/feeds/{feed_id}/")
    shown(rows, "one feed (/api/feeds/<id>/)", f"{timed(get)}, {queries_of(get)} queries")
    get = ok(client, f"/c/{latest.pk}/export.md")
    shown(rows, "one conversation as Markdown", timed(get, 10))
    return rows


def dashboard() -> list[tuple[str, str]]:
    from django.contrib.auth.models import User
    from django.test import Client

    admin, _ = User.objects.get_or_create(
        username="history-admin", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(admin)
    get = ok(client, "/admin/activity/activityfeed/dashboard/")
    rows: list[tuple[str, str]] = []
    shown(rows, "admin dashboard (30 days of tool calls)", f"{timed(get, 5)}, {queries_of(get)} q")
    get = ok(client, "/admin/activity/activityfeed/")
    shown(rows, "admin feed list", f"{timed(get, 5)}, {queries_of(get)} queries")
    return rows


def audit() -> list[tuple[str, str]]:
    from activity.auditing.audit import ledger_problems, period, verify

    started = time.perf_counter()
    checked = broken = 0
    for integrity in verify(period(None, None)):
        checked += integrity.check.events
        broken += not integrity.intact
    problems = list(ledger_problems())
    elapsed = time.perf_counter() - started
    return [
        (
            "verify_audit (chains, closings, answers, ledger)",
            f"{checked / elapsed:,.0f} events/s, {checked:,} events in {elapsed:.0f} s, "
            f"{broken} broken, {len(problems)} ledger problems",
        )
    ]


def export_only(share: int) -> None:
    """The NDJSON export of every feed whose id is a multiple of `share`, in this process:
    its peak RSS then, and before."""
    setup()
    from django.db.models import F
    from django.db.models.functions import Mod

    from activity.auditing.export import export_stream
    from activity.models import ActivityFeed

    feeds = ActivityFeed.objects.annotate(
        username=F("owner__username"), message_id=F("message__id")
    )
    if share > 1:
        feeds = feeds.alias(part=Mod("id", share)).filter(part=0)
    before = _rss("VmRSS")

    async def consume() -> tuple[int, int]:
        size = events = 0
        async for part in export_stream(feeds, "ndjson"):
            size += len(part)
            events += part.count('"seq":')
        return size, events

    started = time.perf_counter()
    size, events = asyncio.run(consume())
    elapsed = time.perf_counter() - started
    print(
        f"{events:,} events, {events / elapsed:,.0f} events/s, {size / 2**20:,.0f} MiB written, "
        f"RSS {before:.0f} MiB before, peak {_rss('VmHWM'):.0f} MiB"
    )


def _rss(name: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def exports() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for share, label in ((10, "a tenth of the feeds"), (1, "every feed")):
        done = subprocess.run(
            [sys.executable, __file__, "--export", str(share)],
            capture_output=True,
            text=True,
            check=True,
        )
        shown(rows, f"NDJSON export, {label}", done.stdout.strip().splitlines()[-1])
    return rows


def main() -> None:
    if sys.argv[1:2] == ["--export"]:
        export_only(int(sys.argv[2]))
        return
    print(f"machine: {machine()}, load {os.getloadavg()[0]:.2f} at the start")
    setup()
    from django.db import connection

    print(f"database: {connection.vendor}")
    # Each part's rows print as they come, then again together at the end.
    parts = {"pages": pages, "admin": dashboard, "export": exports, "audit": audit}
    chosen = sys.argv[1:] or list(parts)
    for name in chosen:
        print(f"{name}:", flush=True)
        report(f"History of real size: {name}", parts[name]())
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
