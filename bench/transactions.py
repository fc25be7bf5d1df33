"""Database transactions against concurrent sessions: `python -m project.serve --workers 2` on
PostgreSQL and Redis, asked by 10, 100, 300 and 1,000 sessions at once (each a fresh
conversation and socket asking one question: a tool call, then a streamed answer).

For each step: the turns completed, the wall time, the transactions the database committed
(`pg_stat_database.xact_commit` of the bench's own database, sampled before and after), and
from them transactions a second, turns a second and transactions a turn. The group commit
writes every running turn's rows in one transaction per window (GLASSBOX_COMMIT_SECONDS), so
transactions a turn should fall as sessions rise, and transactions a second grow slower than
the sessions. Each server process also counts what becomes a transaction, by kind
(bench/census_asgi.py: writes, reads run one statement at a time, Django's health checks),
and the two counts are printed side by side. At the end every turn is checked against the
database: the answer `complete` with the text its client read, and every numbered line its
client saw stored in its feed.

PostgreSQL counts a backend's transactions in memory and publishes them when it has been idle
for a while (within PGSTAT_IDLE_INTERVAL, 10 s, in PostgreSQL 15) or when it exits. So a
sample waits until every backend of the bench's database has been idle that long: the
server's idle connections are then counted in full. The sampler itself reads from the
`postgres` database, whose counters it leaves alone.

    .venv/bin/python bench/transactions.py
    BENCH_SESSIONS=10,100 .venv/bin/python bench/transactions.py

BENCH_DATABASE_URL (default postgres://glassbox:glassbox@127.0.0.1:5432/glassbox_txcurve) is
dropped and created again; BENCH_REDIS_URL defaults to redis://127.0.0.1:6390/6."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from common import REJECTED_HANDSHAKES, conversations, fake_llm, machine, report, turn_over_socket
from workers import served

SESSIONS = [int(n) for n in os.environ.get("BENCH_SESSIONS", "10,100,300,1000").split(",")]
DATABASE = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://glassbox:glassbox@127.0.0.1:5432/glassbox_txcurve"
)
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6390/6")
# Sockets open at this pace, not in one burst: a thousand handshakes at once overflow the
# listen backlog and time out, which would measure the kernel, not the writes.
RAMP_PER_SECOND = float(os.environ.get("BENCH_RAMP", "100"))
# Daphne drops a socket whose handshake the application has not answered within 5 s. On a
# full database thread the opening read waits longer than that behind the turns' trips: the
# client asks again, the dropped socket's reads still run, and the retries feed the queue
# they wait in. Measured at 300 sessions on a busy machine: 2,240 retries, 76 turns of 300.
# This bench counts transactions, so a socket waits for its turn instead.
CONNECT_TIMEOUT_S = 120
# The model: 0.3 s to the first byte, a tool call, then 10 tokens of 16 characters at 5 a
# second, so a turn lasts about 25 commit windows. Few, long tokens: the fake model and the
# clients share the 2 cores, and at 40 tokens a second 1,000 streams starved the fake
# model's loop until the servers' requests timed out connecting to it.
LLM_PACE = ("--ttft", "0.3", "--tokens", "10", "--rate", "5", "--chunk", "16")
# PostgreSQL 15 publishes an idle backend's counters within PGSTAT_IDLE_INTERVAL (10 s).
PUBLISHED_AFTER_IDLE_S = 11.0
WARM_UP_TURNS = 4  # so each worker has loaded what its first turn loads
WORKERS = 2
QUESTION = "How do I negotiate my salary?"  # the demo's search: a tool call, then the answer


@dataclass
class Counters:
    """pg_stat_database's figures for one database at one moment."""

    commits: int
    rollbacks: int

    def __sub__(self, other: Counters) -> Counters:
        return Counters(self.commits - other.commits, self.rollbacks - other.rollbacks)


class Database:
    """The bench's own database, made fresh, and a sampler connected beside it."""

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg import sql

        self.name = url.rsplit("/", 1)[1]
        self.admin = psycopg.connect(url, dbname="postgres", autocommit=True)
        name = sql.Identifier(self.name)
        self.admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        self.admin.execute(sql.SQL("CREATE DATABASE {}").format(name))

    def settled(self) -> Counters:
        """The counters once every backend of the database has published its own."""
        deadline = time.monotonic() + 120
        while True:
            counted = self.admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                "pg_backend_pid() AND (state IS DISTINCT FROM 'idle' "
                "OR state_change > now() - make_interval(secs => %s))",
                (self.name, PUBLISHED_AFTER_IDLE_S),
            ).fetchone()
            assert counted is not None  # a count is one row
            if not counted[0]:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the database's backends never went idle")
            time.sleep(0.5)
        row = self.admin.execute(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = %s",
            (self.name,),
        ).fetchone()
        assert row is not None, f"no statistics for the database {self.name}"
        return Counters(*row)


class Census:
    """What the server's processes counted themselves (bench/census_asgi.py): the
    transactions by kind, and the statements."""

    def __init__(self, folder: Path, processes: int) -> None:
        self.folder, self.processes = folder, processes

    def read(self) -> tuple[Counter[str], Counter[str]]:
        """The sums of every process's counts, written after this call began."""
        asked = time.time()
        deadline = time.monotonic() + 30
        while True:
            snapshots = []
            for path in self.folder.glob("*.json"):
                data = json.loads(path.read_text())
                if data["at"] > asked:
                    snapshots.append(data)
            if len(snapshots) >= self.processes:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the servers' census is not being written")
            time.sleep(0.2)
        transactions: Counter[str] = Counter()
        statements: Counter[str] = Counter()
        for data in snapshots:
            transactions.update(data["transactions"])
            statements.update(data["statements"])
        return transactions, statements


@dataclass
class Turn:
    asked: float = 0.0
    ended: float = 0.0
    events: list = field(default_factory=list)
    problem: str = ""

    @property
    def complete(self) -> bool:
        last = self.events[-1][1] if self.events else {}
        return last.get("type") == "done" and last.get("state") == "complete"


async def ask_all(server, ids: list[str], cookies: str) -> list[Turn]:
    async def one(n: int, conversation: str) -> Turn:
        await asyncio.sleep(n / RAMP_PER_SECOND)
        turn = Turn(asked=time.monotonic())
        try:
            turn.events = await turn_over_socket(server, conversation, cookies, QUESTION)
        except Exception as problem:
            turn.problem = f"{type(problem).__name__}: {problem}"
        turn.ended = time.monotonic()
        return turn

    return await asyncio.gather(*(one(n, c) for n, c in enumerate(ids)))


def most_in_flight(turns: list[Turn]) -> int:
    moments = sorted([(t.asked, 1) for t in turns] + [(t.ended, -1) for t in turns])
    running = peak = 0
    for _, change in moments:
        running += change
        peak = max(peak, running)
    return peak


def step(database: Database, census: Census, server, ids, cookies, sampled) -> tuple[dict, tuple]:
    """One step's figures, from the samples taken before it (`sampled`) and after it."""
    before, (tx_before, st_before) = sampled
    REJECTED_HANDSHAKES.clear()
    load = os.getloadavg()[0]
    started = time.monotonic()
    turns = asyncio.run(ask_all(server, ids, cookies))
    wall = max(t.ended for t in turns) - started
    after = database.settled()
    tx_after, st_after = census.read()
    spent = after - before
    complete = sum(t.complete for t in turns)
    figures = {
        "sessions": len(ids),
        "turns": turns,
        "complete": complete,
        "in_flight": most_in_flight(turns),
        "wall": wall,
        "commits": spent.commits,
        "rollbacks": spent.rollbacks,
        "load": (load, os.getloadavg()[0]),
        "refused": len(REJECTED_HANDSHAKES),
        "counted": tx_after - tx_before,
        "statements": (st_after - st_before).total(),
    }
    return figures, (after, (tx_after, st_after))


def stored_as_seen(figures: list[dict]) -> None:
    """Each turn against the database, from Django in this process (after the last sample,
    so these reads are in no step's count)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()
    from activity.models import ActivityEvent
    from chat.models import Message

    rows = []
    for step_figures in figures:
        seen = {}
        for turn in step_figures["turns"]:
            events = [event for _, event in turn.events]
            started = next((e for e in events if e["type"] == "turn"), None)
            if started is None:
                continue
            seqs = {e["seq"] for e in events if "seq" in e}
            text = "".join(e["content"] for e in events if e["type"] == "text")
            seen[started["message_id"]] = (seqs, text)
        answers = {str(pk): answer for pk, answer in Message.objects.in_bulk(list(seen)).items()}
        stored: dict[int, set[int]] = {}
        feeds = [answer.feed_id for answer in answers.values()]
        for feed, seq in ActivityEvent.objects.filter(feed_id__in=feeds).values_list(
            "feed_id", "seq"
        ):
            stored.setdefault(feed, set()).add(seq)
        matching, lines_seen, lines_stored = 0, 0, 0
        rows_in_feeds = sum(len(seqs) for seqs in stored.values())
        for message_id, (seqs, text) in seen.items():
            answer = answers.get(message_id)
            kept = stored.get(answer.feed_id, set()) if answer and answer.feed_id else set()
            lines_seen += len(seqs)
            lines_stored += len(kept & seqs)
            if answer and answer.state == "complete" and answer.content == text and seqs <= kept:
                matching += 1
        rows.append(
            (
                f"{step_figures['sessions']} sessions",
                f"{matching} / {step_figures['sessions']} answers complete and stored as seen; "
                f"{lines_stored:,} / {lines_seen:,} numbered lines seen are stored "
                f"({rows_in_feeds:,} rows in these feeds)",
            )
        )
    report("Every turn against the database", rows)


def main() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the servers inherit it
    print(f"machine: {machine()}; open files: {hard}", flush=True)
    database = Database(DATABASE)
    os.environ["DATABASE_URL"] = DATABASE
    # Other servers may share this Redis database: their groups stay apart from ours.
    os.environ["GLASSBOX_CHANNEL_PREFIX"] = f"bench-{uuid.uuid4().hex[:8]}"
    # Each process reads the MCP servers an admin added every beat (10 s): at an hour, an
    # idle server leaves its connections idle, and the counts hold the turns alone.
    os.environ["GLASSBOX_MCP_HEARTBEAT_SECONDS"] = "3600"
    # The fake model accepts late on a full machine; a turn that failed to connect would be
    # the harness's failure, not the servers'.
    os.environ["GLASSBOX_CONNECT_TIMEOUT"] = "60"
    total = WARM_UP_TURNS + sum(SESSIONS)
    figures = []
    begun = time.monotonic()
    with tempfile.TemporaryDirectory() as work, fake_llm(*LLM_PACE) as llm:
        folder = Path(work) / "census"
        folder.mkdir()
        os.environ["BENCH_CENSUS_DIR"] = str(folder)
        census = Census(folder, WORKERS)
        daphne_args = ("--websocket_connect_timeout", str(CONNECT_TIMEOUT_S),
                       "bench.census_asgi:application")  # fmt: skip
        with served(Path(work) / "served", llm, REDIS, WORKERS, daphne_args) as server:
            ids, cookies = conversations(server, total)
            warm, ids = ids[:WARM_UP_TURNS], ids[WARM_UP_TURNS:]
            asyncio.run(ask_all(server, warm, cookies))
            counters = (database.settled(), census.read())
            print(f"  served and warm after {time.monotonic() - begun:.0f} s", flush=True)
            for sessions in SESSIONS:
                mine, ids = ids[:sessions], ids[sessions:]
                done, counters = step(database, census, server, mine, cookies, counters)
                figures.append(done)
                print_step(done)
    print_table(figures)
    print_kinds(figures)
    stored_as_seen(figures)


def print_step(f: dict) -> None:
    endings = Counter(
        t.problem or json.dumps(t.events[-1][1])[:120] for t in f["turns"] if not t.complete
    )
    problems = endings.most_common(3)
    print(
        f"  {f['sessions']} sessions: {f['complete']} complete in {f['wall']:.1f} s, "
        f"{f['commits']:,} commits, load {f['load'][0]:.1f} -> {f['load'][1]:.1f}"
        + (f"; {problems}" if problems else ""),
        flush=True,
    )


HEALTH_CHECK = "health check SELECT 1 (Django, on a kept connection)"


def kind_of(counted: str) -> str:
    """A census key as a row of the table by kind: the commits fall in two groups (their
    statements vary with what the turns in them had pending)."""
    if counted.startswith("commit of INSERT chat_message"):
        return "write: a question's rows (question, answer, feed)"
    if counted.startswith("commit of"):
        return "write: turns' rows (group commits, tool calls, ends)"
    return counted


def share(f: dict, test) -> float:
    return sum(n for key, n in f["counted"].items() if test(key)) / max(f["complete"], 1)


def print_table(figures: list[dict]) -> None:
    head = ("sessions", "most in flight", "complete", "wall s", "transactions", "tx/s",
            "turns/s", "tx/turn", "writes / reads / health checks a turn", "statements/turn",
            "load 1 min")  # fmt: skip
    print("\n## Transactions against sessions (--workers 2, PostgreSQL, Redis)")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for f in figures:
        complete = max(f["complete"], 1)
        writes = share(f, lambda key: key.startswith("commit"))
        reads = share(f, lambda key: key.startswith("autocommit"))
        checks = share(f, lambda key: key == HEALTH_CHECK)
        cells = (
            f"{f['sessions']:,}",
            f"{f['in_flight']:,}",
            f"{f['complete']:,} / {f['sessions']:,}",
            f"{f['wall']:.1f}",
            f"{f['commits']:,}",
            f"{f['commits'] / f['wall']:.0f}",
            f"{f['complete'] / f['wall']:.1f}",
            f"{f['commits'] / complete:.1f}",
            f"{writes:.1f} / {reads:.1f} / {checks:.1f}",
            f"{f['statements'] / complete:.1f}",
            f"{f['load'][0]:.1f} → {f['load'][1]:.1f}",
        )
        print("| " + " | ".join(cells) + " |")
    rollbacks = ", ".join(str(f["rollbacks"]) for f in figures)
    refused = ", ".join(str(f["refused"]) for f in figures)
    print(f"rollbacks: {rollbacks}; handshakes refused and retried: {refused}")


def print_kinds(figures: list[dict]) -> None:
    """Transactions a turn by kind, as the servers counted them, beside the database's
    count."""
    grouped = []
    for f in figures:
        kinds: Counter[str] = Counter()
        for key, n in f["counted"].items():
            kinds[kind_of(key)] += n
        grouped.append(kinds)
    order = sorted({kind for kinds in grouped for kind in kinds}, key=lambda k: -grouped[0][k])
    print("\n## Transactions a turn, by kind (counted by the servers)")
    print("| kind | " + " | ".join(f"{f['sessions']:,} sessions" for f in figures) + " |")
    print("| --- |" + " --- |" * len(figures))
    for kind in order:
        cells = [
            f"{k[kind] / max(f['complete'], 1):.2f}" for f, k in zip(figures, grouped, strict=True)
        ]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    # The group commit's pace: every GLASSBOX_COMMIT_SECONDS on an idle database thread,
    # but its trip queues behind every other one there.
    paces = []
    for f, kinds in zip(figures, grouped, strict=True):
        commits = kinds["write: turns' rows (group commits, tool calls, ends)"]
        paces.append(f"{WORKERS * f['wall'] / commits:.2f}" if commits else "none")
    print("| seconds between two commits of turns' rows, a process | " + " | ".join(paces) + " |")
    totals = [f"{f['counted'].total():,} / {f['commits']:,}" for f in figures]
    print("| counted by the servers / by PostgreSQL | " + " | ".join(totals) + " |")


if __name__ == "__main__":
    main()
