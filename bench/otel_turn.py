"""What traces cost a turn: the same demo turns (the offline model with no delay, so the
turn's own work is all there is to compare with) run with OTEL_EXPORTER_OTLP_ENDPOINT unset
and set to an OTLP/HTTP sink in another process. Figure: CPU and wall milliseconds per turn
in this process (the batch exporter's thread included), and the ratio set / unset.

    PYTHONPATH=. .venv/bin/python bench/otel_turn.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TURNS = 30
QUESTION = "How do I negotiate my salary?"
SINK = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def setup(work: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="project.settings",
        DATABASE_URL=f"sqlite:///{work}/bench.sqlite3",
        OPENAI_API_KEY="",
        GLASSBOX_DEMO_DELAY="0",
        GLASSBOX_TURNS_PER_MINUTE="1000000",
        LOG_LEVEL="ERROR",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from chat.knowledge.documents import DOCUMENTS
    from chat.models import Document

    Document.objects.bulk_create(
        Document(title=t, language=lang, body=b) for t, lang, b in DOCUMENTS
    )


def turns(count: int) -> tuple[float, float]:
    """CPU and wall milliseconds per turn."""
    from django.contrib.auth import get_user_model

    from chat.models import Conversation
    from tests.support.turns import run_turn

    user, _ = get_user_model().objects.get_or_create(username="bench")
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        run_turn(Conversation.objects.create(owner=user), QUESTION)
    from activity import telemetry

    if telemetry.enabled():
        from activity.telemetry import export

        assert export.flush()  # the spans' sending is part of the cost
    return (time.process_time() - cpu) * 1000 / count, (time.perf_counter() - wall) * 1000 / count


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        setup(work)
        from django.conf import settings

        sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
        try:
            assert sink.stdout is not None
            port = int(sink.stdout.readline())
            turns(3)  # warm-up: imports, caches, the first connection
            settings.OTEL_EXPORTER_OTLP_ENDPOINT = f"http://127.0.0.1:{port}"
            turns(3)
            results: dict[str, list[tuple[float, float]]] = {}
            for label, endpoint in (("unset", ""), ("set", f"http://127.0.0.1:{port}")) * 3:
                settings.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint
                cpu, wall = turns(TURNS)
                results.setdefault(label, []).append((cpu, wall))
        finally:
            sink.terminate()
            sink.wait()
    best = {label: min(runs) for label, runs in results.items()}
    for label, (cpu, wall) in best.items():
        print(f"endpoint {label:5}: {cpu:6.1f} ms CPU/turn, {wall:6.1f} ms wall/turn")
    print(
        f"traces cost: {best['set'][0] - best['unset'][0]:+.1f} ms CPU/turn, "
        f"ratio set/unset {best['set'][0] / best['unset'][0]:.3f} (CPU), "
        f"{best['set'][1] / best['unset'][1]:.3f} (wall)"
    )


if __name__ == "__main__":
    main()
