"""The offline demo model: what it answers, as the deltas a provider streams (the transport
that puts them on the wire, so the real openai client parses every byte, is demo_wire).

It is deterministic and covers every path of the agent: a direct answer, one search, two
tools in sequence, two tools in parallel, a plan ticked off round by round, a tool failure
with its fallback, the contact form and a calculation, in the user's language as the system
prompt tells it (English, Italian or Traditional Chinese), or in the question's when that is
plainly another."""

from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async

from chat.agent.context import Search
from chat.agent.demo_script import say
from chat.agent.mcp.config import SEPARATOR
from chat.agent.mcp.connect_tool import connect_tool_name, connected_server
from chat.agent.tools import FEEDBACK_ARG
from chat.knowledge.words import CJK, STOPWORDS

MODEL = "glassbox-demo"
TEXT_CHUNK = 4
ARGUMENT_CHUNK = 6
ITALIAN_HINTS = frozenset(
    "il lo la gli di che come per non sono mio mia del della vorrei posso devo mi ciao "
    "stipendio lavoro colloquio quanto fa calcola ora contattare parlare confronta".split()
)
TIME_WORDS = re.compile(r"\b(time|date|today|clock|ora|ore|data|oggi)\b|時間|日期|幾點|今天")
CONTACT_WORDS = re.compile(
    r"\b(contact|human|person|advisor|contatt\w*|persona|consulente)\b|聯絡|聯繫|真人|顧問"
)
COMPARE_WORDS = re.compile(r"\b(compare|both|versus|confront\w*|entrambi)\b|比較")
SURVEY_WORDS = re.compile(r"\b(surveys?|sondagg\w*|indagin\w*)\b|調查")
SURVEY_TOOL = "__compare_salary_surveys"
# The demo server's tool that asks the user a question (an MCP elicitation) before it runs.
OFFER_WORDS = re.compile(r"\b(offer letter|lettera d'offerta|lettera di offerta)\b|錄取信|聘書")
OFFER_TOOL = "__draft_offer_letter"
# A question that names an offered tool calls it, with the JSON object that follows, if any.
NAMED_TOOL = re.compile(r"\b([A-Za-z0-9-]+__[A-Za-z0-9_-]+)(\s*\{.*\})?", re.DOTALL)
# A question that asks for a plan, and needs more than one round of tools, gets one: the
# steps laid out first, ticked off round by round (chat.tools.plan).
PLAN_WORDS = re.compile(r"\b(plan|step by step|piano|passo (dopo|per) passo)\b|計畫|計劃|步驟")
PLAN_TOOL = "update_plan"
THINK_WORDS = re.compile(r"\b(think|thinking|reason|pensa\w*|ragiona\w*)\b|思考|想一想")
REASONING_CHUNK = 6
EMAIL_WORDS = re.compile(r"\b(e-?mail\w*|mail)\b|郵件|電郵")
ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
FAILURE_WORDS = re.compile(r"\b(simulate|simula)\b|模擬")
SPLIT_WORDS = re.compile(r"\band\b|\bwith\b|\be\b|\bcon\b|和|與|跟", re.IGNORECASE)
EXPRESSION = re.compile(
    r"(?:sqrt\()?[\d(][\d\s.,()+\-*/×÷%^]*[+\-*/×÷%^][\d\s.,()+\-*/×÷%^]*\d\)?"
)


ROLE_WORDS = re.compile(r"engineer|designer|manager|analyst")
TOLD_LANGUAGE = re.compile(r"language code ([\w-]+)")


def detect_language(text: str) -> str:
    if CJK.search(text):
        return "zh"
    words = set(re.findall(r"[^\W\d_]+", text.casefold()))
    return "it" if words & ITALIAN_HINTS else "en"


def reply_language(question: str, system: str) -> str:
    """As the system prompt asks: the user's language, unless the question is plainly in
    another one (English is what the demo assumes when it sees neither)."""
    written = detect_language(question)
    told = TOLD_LANGUAGE.search(system)
    if written != "en" or told is None:
        return written
    code = told.group(1).lower()
    return "zh" if code.startswith("zh") else code if code in {"it", "en"} else "en"


def keywords(question: str, limit: int = 60) -> str:
    if CJK.search(question):
        text = re.sub(r"[\s?？。，,!！]+", "", question)
    else:
        words = re.findall(r"[^\W\d_]+", question)
        text = " ".join(w for w in words if w.casefold() not in STOPWORDS)
    return text[:limit] or question[:limit]


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    arguments: dict[str, Any]


class DemoModel:
    """Decides what to say; DemoTransport puts it on the wire. It looks in the knowledge base
    through `search`, handed in with its client (chat.turns.deps); without one it finds
    nothing there."""

    def __init__(self, search: Search | None = None) -> None:
        self.search = search

    async def respond(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The deltas of one streamed response, in order."""
        messages = body.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        question = _text(messages[last_user]) if last_user >= 0 else ""
        since_question = messages[last_user + 1 :]
        system = next((_text(m) for m in messages if m.get("role") == "system"), "")
        language = reply_language(question, system)
        offered = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        bare = {t.get("function", {}).get("name") for t in body.get("tools") or [] if _bare(t)}
        called = {
            call.get("function", {}).get("name")
            for m in since_question
            for call in m.get("tool_calls") or []
        }
        rounds = await self.plan(question, language, offered, called, bare=bare)
        done = sum(
            1 for m in since_question if m.get("role") == "assistant" and m.get("tool_calls")
        )
        thought = _reasoning_deltas(
            say("reasoning_tools" if offered and done < len(rounds) else "reasoning", language)
            if THINK_WORDS.search(question.casefold())
            else ""
        )
        if offered and done < len(rounds):
            calls = rounds[done]
            deltas = _tool_call_deltas(calls, prefix=f"call_demo_{len(messages)}")
        elif since_question:
            deltas = _text_deltas(self.answer_from_tools(since_question, language))
        else:
            short = " ".join(question.split())[:200]
            deltas = _text_deltas(say("direct", language, question=short))
        deltas = thought + deltas
        if (body.get("stream_options") or {}).get("include_usage"):
            deltas.append({"usage": _usage(body, deltas)})
        return deltas

    async def plan(
        self,
        question: str,
        language: str,
        offered: set[str],
        called: AbstractSet[str] = frozenset(),
        *,
        bare: AbstractSet[str] = frozenset(),
    ) -> list[list[Call]]:
        """The tool rounds this question calls for; one round may hold parallel calls. A
        server whose tools are not offered yet is opened first, by its connect tool
        (`called` says which were, in earlier rounds of this answer); `bare` are the offered
        tools that need no argument."""
        rounds = await self._rounds(question, language, offered, called)
        rounds = [*rounds, *self.using_opened(rounds, called, bare, language)]
        if PLAN_WORDS.search(question.casefold()) and PLAN_TOOL in offered:
            return planned(rounds)
        return rounds

    def using_opened(
        self,
        rounds: list[list[Call]],
        called: AbstractSet[str],
        bare: AbstractSet[str],
        language: str,
    ) -> list[list[Call]]:
        """A server opened for a question that then needs none of its tools (it names one
        the server lacks, or the survey tool was not there) would leave the user connected
        for nothing: its first tool that needs no argument is called, and answers."""
        if any(connected_server(call.tool) is None for calls in rounds for call in calls):
            return []
        opened = [
            server
            for calls in rounds
            for call in calls
            if call.tool in called and (server := connected_server(call.tool))
        ]
        # Only once a server opened are its tools offered: a failed opening adds nothing.
        usable = [
            next((name for name in sorted(bare) if name.startswith(server + SEPARATOR)), None)
            for server in opened
        ]
        feedback = {FEEDBACK_ARG: say("feedback_tool", language)}
        calls = [Call(tool, dict(feedback)) for tool in usable if tool]
        return [calls] if calls else []

    async def _rounds(
        self,
        question: str,
        language: str,
        offered: set[str],
        called: AbstractSet[str],
    ) -> list[list[Call]]:
        folded = question.casefold()
        named = NAMED_TOOL.search(question)
        if named:
            tool = named.group(1)
            opener = connect_tool_name(tool.split(SEPARATOR, 1)[0])
            opening = []
            if opener in called or (opener in offered and tool not in offered):
                opening = [[self.opening(opener, language)]]
            if tool in offered:
                return [*opening, [Call(tool, self.named_arguments(named.group(2), language))]]
            if opening:
                return opening
        if EMAIL_WORDS.search(folded) and "send_email" in offered:
            address = ADDRESS.search(question)
            to = address.group() if address else "advisor@example.com"
            arguments = {
                "feedback_to_user": say("feedback_email", language, to=to),
                "to": to,
                "subject": say("email_subject", language),
                "body": question,
            }
            return [[Call("send_email", arguments)]]
        surveys = sorted(name for name in offered if name.endswith(SURVEY_TOOL))
        # Servers not open yet may hold the survey tool: opened first, all at once.
        openers = sorted(n for n in offered | called if n and connected_server(n))
        opened = [n for n in openers if n in called]
        opening = [[self.opening(n, language) for n in (opened or openers)]]
        if SURVEY_WORDS.search(folded) and (surveys or openers):
            if not surveys:
                return opening
            feedback = say("feedback_surveys", language, role=keywords(question))
            role = ROLE_WORDS.search(folded)
            arguments = {
                "feedback_to_user": feedback,
                "role": role.group() if role else "engineer",
            }
            return [*(opening if opened else []), [Call(surveys[0], arguments)]]
        letters = sorted(name for name in offered if name.endswith(OFFER_TOOL))
        if OFFER_WORDS.search(folded) and (letters or openers):
            if not letters:
                return opening
            role = ROLE_WORDS.search(folded)
            arguments = {
                "feedback_to_user": say("feedback_offer", language),
                "role": role.group() if role else "engineer",
            }
            return [*(opening if opened else []), [Call(letters[0], arguments)]]
        if FAILURE_WORDS.search(folded) and "search_documents" in offered:
            # No query: the tool's argument validation fails, and the agent falls back.
            feedback = say("feedback_search", language, query=keywords(question))
            return [[Call("search_documents", {"feedback_to_user": feedback})]]
        if CONTACT_WORDS.search(folded) and "request_contact_form" in offered:
            return [[Call("request_contact_form", {"topic": keywords(question)})]]
        rounds: list[list[Call]] = []
        if TIME_WORDS.search(folded) and "current_datetime" in offered:
            feedback = say("feedback_datetime", language)
            rounds.append([Call("current_datetime", {"feedback_to_user": feedback})])
        expression = _expression(question)
        if expression and "calculator" in offered:
            feedback = say("feedback_calculator", language, expression=expression)
            arguments = {"feedback_to_user": feedback, "expression": expression}
            rounds.append([Call("calculator", arguments)])
        if "search_documents" in offered and self.search is not None:
            parts = [question]
            if COMPARE_WORDS.search(folded):
                parts = [p for p in SPLIT_WORDS.split(question) if p.strip()] or parts
            searches = [
                self.search_call(part, language)
                for part in parts
                if await sync_to_async(self.search.documents)(part, 1)
            ]
            if searches:
                rounds.append(searches)
        return rounds

    def opening(self, opener: str, language: str) -> Call:
        server = connected_server(opener) or opener
        return Call(opener, {"feedback_to_user": say("feedback_connect", language, server=server)})

    def named_arguments(self, written: str | None, language: str) -> dict[str, Any]:
        try:
            arguments = json.loads(written) if written else {}
        except ValueError:
            arguments = {}
        if not isinstance(arguments, dict):
            arguments = {}
        return {"feedback_to_user": say("feedback_tool", language), **arguments}

    def search_call(self, text: str, language: str) -> Call:
        query = keywords(text)
        feedback = say("feedback_search", language, query=query)
        return Call("search_documents", {"feedback_to_user": feedback, "query": query})

    def answer_from_tools(self, since_question: list[dict[str, Any]], language: str) -> str:
        names = {
            call["id"]: call["function"]["name"]
            for message in since_question
            for call in message.get("tool_calls") or []
        }
        parts = []
        for message in since_question:
            if message.get("role") != "tool":
                continue
            tool = names.get(message.get("tool_call_id"), "")
            try:
                content = json.loads(_text(message))
            except ValueError:
                # An MCP tool's text result is plain text, and so is an opened server's.
                plain = "__" in tool or connected_server(tool)
                content = _text(message) if plain else {"error": "unreadable result"}
            parts.append(self.describe(tool, content, language))
        # An opening says something only when nothing came after it: the feed already says
        # the server opened, and its tools' results are what the user asked for.
        said = [part for part in parts if part] or [
            say("opened", language, server=connected_server(tool) or tool)
            for tool in names.values()
            if connected_server(tool)
        ]
        return "\n\n".join(said)

    def describe(self, tool: str, content: Any, language: str) -> str:
        if tool == PLAN_TOOL:
            return ""  # the plan's line says it all
        if tool == "send_email" and isinstance(content, dict):
            if "error" in content:
                return say("email_not_sent", language, reason=content["error"])
            return say("emailed", language, to=content["to"])
        server = connected_server(tool)
        if server and isinstance(content, dict) and "error" in content:
            return say("not_opened", language, server=server, reason=content["error"])
        if server:
            return ""
        if isinstance(content, dict) and "error" in content:
            return say("tool_failed", language, tool=tool, reason=content["error"])
        if tool == "calculator":
            return say("calculated", language, **content)
        if tool == "current_datetime":
            when = content["iso"].replace("T", " ")[:16]
            return say("now", language, when=when, timezone=content["timezone"])
        if tool == "request_contact_form":
            return say("contact", language)
        if tool.endswith(SURVEY_TOOL) and isinstance(content, dict) and "surveys" in content:
            rows = [f"| {s['survey']} | {s['median_eur']:,} € |" for s in content["surveys"]]
            table = "\n".join(["| Survey | Median |", "| --- | --- |", *rows])
            median = f"{content['median_eur']:,}"
            return say("surveys", language, role=content["role"], median=median) + "\n\n" + table
        if "__" in tool:
            return say(
                "tool_said", language, tool=tool, text=json.dumps(content, ensure_ascii=False)
            )
        if not content:
            return say("nothing_found", language)
        lines = [say("found", language), ""]
        for document in content:
            lines += [f"**{document.get('title', '')}**", "", str(document.get("snippet", "")), ""]
        lines.append(say("follow_up", language))
        return "\n".join(lines)


def planned(rounds: list[list[Call]]) -> list[list[Call]]:
    """The rounds with the plan: each step's update with its calls, then all done. Not
    for one round, nor with a server to open (its rounds are known only once it is open)."""
    if len(rounds) < 2 or any(connected_server(c.tool) for calls in rounds for c in calls):
        return rounds
    steps = [
        " · ".join(str(call.arguments.get(FEEDBACK_ARG) or call.tool) for call in calls)
        for calls in rounds
    ]

    def update(under_way: int) -> list[Call]:
        states = [
            "done" if n < under_way else "in_progress" if n == under_way else "pending"
            for n in range(len(steps))
        ]
        plan = [{"text": text, "state": state} for text, state in zip(steps, states, strict=True)]
        return [Call(PLAN_TOOL, {"steps": plan})]

    # Each update goes with its step's calls, as a model calls tools in parallel: the plan
    # costs one more round, not one a step.
    return [[*update(number), *calls] for number, calls in enumerate(rounds)] + [
        update(len(rounds))
    ]


def _bare(tool: dict[str, Any]) -> bool:
    """Whether a tool's schema needs no argument but the feedback every tool takes."""
    parameters = tool.get("function", {}).get("parameters") or {}
    return set(parameters.get("required") or []) <= {FEEDBACK_ARG}


def _expression(question: str) -> str:
    match = EXPRESSION.search(question)
    if not match:
        return ""
    text = match.group().strip().rstrip(".,")
    # A thousands separator, not a decimal point: "52,000" is 52000.
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _reasoning_deltas(text: str) -> list[dict[str, Any]]:
    size = REASONING_CHUNK
    return [{"reasoning_content": text[i : i + size]} for i in range(0, len(text), size)]


def _usage(body: dict[str, Any], deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens as a real provider counts them, roughly: four characters a token."""
    asked = json.dumps(body.get("messages"), ensure_ascii=False) + json.dumps(body.get("tools"))
    thought = sum(len(d.get("reasoning_content", "")) for d in deltas)
    written = sum(
        len(d.get("content") or "")
        + sum(len(c["function"].get("arguments", "")) for c in d.get("tool_calls") or [])
        for d in deltas
    )
    prompt, reasoning = len(asked) // 4 + 1, thought // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": written // 4 + 1 + reasoning,
        "total_tokens": prompt + written // 4 + 1 + reasoning,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _text_deltas(text: str) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": text[i : i + TEXT_CHUNK]} for i in range(0, len(text), TEXT_CHUNK)]
    deltas.append({"finish_reason": "stop"})
    return deltas


def _tool_call_deltas(calls: list[Call], *, prefix: str) -> list[dict[str, Any]]:
    """Parallel calls interleave their argument chunks, as real providers stream them."""
    deltas: list[dict[str, Any]] = []
    pieces = []
    for index, call in enumerate(calls):
        header = {
            "index": index,
            "id": f"{prefix}_{index + 1}",
            "type": "function",
            "function": {"name": call.tool, "arguments": ""},
        }
        first: dict[str, Any] = {"tool_calls": [header]}
        if index == 0:
            first = {"role": "assistant", "content": None, **first}
        deltas.append(first)
        raw = json.dumps(call.arguments, ensure_ascii=False)
        pieces.append([raw[i : i + ARGUMENT_CHUNK] for i in range(0, len(raw), ARGUMENT_CHUNK)])
    for step in range(max(len(p) for p in pieces)):
        for index, chunks in enumerate(pieces):
            if step < len(chunks):
                deltas.append(
                    {"tool_calls": [{"index": index, "function": {"arguments": chunks[step]}}]}
                )
    deltas.append({"finish_reason": "tool_calls"})
    return deltas
