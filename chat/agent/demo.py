"""The offline demo model: an httpx transport that answers chat-completion requests in
OpenAI's streaming wire format, so the real openai client parses every byte of it.

It is deterministic: it searches the knowledge base when the question matches it, answers
directly otherwise, and streams a few characters at a time at a pace a person can watch.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from asgiref.sync import sync_to_async

from chat.search import CJK, STOPWORDS, search_documents

MODEL = "glassbox-demo"
TEXT_CHUNK = 4
ARGUMENT_CHUNK = 6
ITALIAN_HINTS = frozenset(
    "il lo la gli di che come per non sono mio mia del della vorrei posso devo mi ciao "
    "stipendio lavoro colloquio".split()
)

FEEDBACK = {
    "en": "Looking up “{query}” in the knowledge base",
    "it": "Cerco “{query}” nella base di conoscenza",
    "zh": "正在知識庫中查詢「{query}」",
}
FOUND = {
    "en": "Here is what the knowledge base says:",
    "it": "Ecco cosa dice la base di conoscenza:",
    "zh": "以下是知識庫中的相關內容：",
}
FOLLOW_UP = {
    "en": "Ask me to go deeper into any of these.",
    "it": "Chiedimi di approfondire uno di questi punti.",
    "zh": "如需深入了解其中任何一項，請告訴我。",
}
NOTHING_FOUND = {
    "en": "The knowledge base has nothing on this, so I am answering from general knowledge.",
    "it": "La base di conoscenza non contiene nulla su questo: rispondo con le mie conoscenze.",
    "zh": "知識庫中沒有相關資料，以下根據一般知識回答。",
}
TOOL_FAILED = {
    "en": "I could not search the knowledge base just now, so this is a general answer.",
    "it": "Non sono riuscito a consultare la base di conoscenza: ecco una risposta generale.",
    "zh": "目前無法查詢知識庫，以下是一般性的回答。",
}
DIRECT = {
    "en": (
        "I am the Glassbox demo model, running offline. Nothing in the knowledge base "
        "matches “{question}”, so I am answering directly, without tools.\n\n"
        "Try asking about salaries, interviews, CVs or remote work to watch me search."
    ),
    "it": (
        "Sono il modello demo di Glassbox, offline. Nella base di conoscenza non c'è nulla "
        "su “{question}”, quindi rispondo direttamente, senza strumenti.\n\n"
        "Chiedimi di stipendi, colloqui, CV o lavoro da remoto per vedermi cercare."
    ),
    "zh": (
        "我是 Glassbox 的離線示範模型。知識庫中沒有與「{question}」相關的內容，"
        "所以我直接回答，不使用工具。\n\n試著問我薪資、面試、履歷或遠端工作，就能看到我查詢知識庫。"
    ),
}


def detect_language(text: str) -> str:
    if CJK.search(text):
        return "zh"
    words = set(re.findall(r"[^\W\d_]+", text.casefold()))
    return "it" if len(words & ITALIAN_HINTS) >= 1 else "en"


def keywords(question: str, limit: int = 60) -> str:
    if CJK.search(question):
        text = re.sub(r"[\s?？。，,!！]+", "", question)
    else:
        words = re.findall(r"[^\W\d_]+", question)
        text = " ".join(w for w in words if w.casefold() not in STOPWORDS)
    return text[:limit] or question[:limit]


class DemoModel:
    """Decides what to answer; DemoTransport puts it on the wire."""

    async def respond(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The deltas of one streamed response, in order."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {"role": "user", "content": ""}
        question = next((_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
        language = detect_language(question)
        offers_search = any(
            t.get("function", {}).get("name") == "search_documents"
            for t in body.get("tools") or []
        )
        if last.get("role") == "tool":
            return _text_deltas(self.answer_from_tool(_text(last), language))
        if offers_search and await sync_to_async(search_documents)(question, limit=1):
            query = keywords(question)
            arguments = json.dumps(
                {
                    "feedback_to_user": FEEDBACK[language].format(query=query),
                    "query": query,
                },
                ensure_ascii=False,
            )
            return _tool_call_deltas("search_documents", arguments, call_id="call_demo_1")
        return _text_deltas(DIRECT[language].format(question=" ".join(question.split())[:200]))

    def answer_from_tool(self, content: str, language: str) -> str:
        try:
            documents = json.loads(content)
        except ValueError:
            documents = None
        if not isinstance(documents, list):
            return TOOL_FAILED[language]
        if not documents:
            return NOTHING_FOUND[language]
        parts = [FOUND[language], ""]
        for document in documents:
            parts.append(f"**{document.get('title', '')}**")
            parts.append("")
            parts.append(str(document.get("snippet", "")))
            parts.append("")
        parts.append(FOLLOW_UP[language])
        return "\n".join(parts)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _text_deltas(text: str) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": text[i : i + TEXT_CHUNK]} for i in range(0, len(text), TEXT_CHUNK)]
    deltas.append({"finish_reason": "stop"})
    return deltas


def _tool_call_deltas(name: str, arguments: str, *, call_id: str) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        }
    ]
    for i in range(0, len(arguments), ARGUMENT_CHUNK):
        piece = arguments[i : i + ARGUMENT_CHUNK]
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    deltas.append({"finish_reason": "tool_calls"})
    return deltas


def _chunk(delta: dict[str, Any], created: int) -> dict[str, Any]:
    finish_reason = delta.pop("finish_reason", None)
    return {
        "id": "chatcmpl-glassbox-demo",
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


class SSEStream(httpx2.AsyncByteStream):
    def __init__(self, deltas: list[dict[str, Any]], delay: float) -> None:
        self.deltas = deltas
        self.delay = delay

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for delta in self.deltas:
            if self.delay:
                await asyncio.sleep(self.delay)
            data = json.dumps(_chunk(dict(delta), created=0), ensure_ascii=False)
            yield f"data: {data}\n\n".encode()
        yield b"data: [DONE]\n\n"


class DemoTransport(httpx2.AsyncBaseTransport):
    def __init__(self, delay: float = 0.0, model: DemoModel | None = None) -> None:
        self.delay = delay
        self.model = model or DemoModel()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return httpx2.Response(
                404, json={"error": {"message": "The demo model only serves chat completions."}}
            )
        body = json.loads(await request.aread())
        deltas = await self.model.respond(body)
        if not body.get("stream"):
            return httpx2.Response(200, json=_completion(deltas))
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=SSEStream(deltas, self.delay),
        )


def _completion(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(d.get("content") or "" for d in deltas)
    return {
        "id": "chatcmpl-glassbox-demo",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
