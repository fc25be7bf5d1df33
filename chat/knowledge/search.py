"""Ranked search over the knowledge base: BM25 over words (Latin scripts) and character
bigrams (Chinese, Japanese), so "negotiating a salary" finds "Salary negotiation"."""

from __future__ import annotations

import math
import re
import threading
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from django.db.models import Count, Max
from django.db.models.signals import post_delete, post_save

from chat.knowledge.words import CJK, STOPWORDS
from chat.models import Document

WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
STEM_LENGTH = 6
K1 = 1.5
B = 0.75


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for match in WORD.finditer(text):
        word = match.group()
        if CJK.search(word):
            chars = [c for c in word if CJK.match(c)]
            tokens.extend(a + b for a, b in pairwise(chars))
            if len(chars) == 1:
                tokens.append(chars[0])
            continue
        folded = _fold(word)
        if folded in STOPWORDS or len(folded) < 2:
            continue
        # A prefix stem is crude but language-neutral: it joins negotiate/negotiation and
        # stipendio/stipendi without a stemmer per language.
        tokens.append(folded[:STEM_LENGTH])
    return tokens


@dataclass(frozen=True, slots=True)
class Hit:
    document_id: int
    title: str
    snippet: str
    score: float


class Index:
    def __init__(self, documents: list[tuple[int, str, str]]) -> None:
        self.documents = {pk: (title, body) for pk, title, body in documents}
        self.terms: dict[int, Counter[str]] = {}
        self.lengths: dict[int, int] = {}
        document_frequency: Counter[str] = Counter()
        for pk, title, body in documents:
            # The title counts twice: a match there says more than one in passing.
            tokens = tokenize(title) * 2 + tokenize(body)
            self.terms[pk] = Counter(tokens)
            self.lengths[pk] = len(tokens)
            document_frequency.update(set(tokens))
        count = max(len(documents), 1)
        self.average_length = sum(self.lengths.values()) / count if documents else 0.0
        self.idf = {
            term: math.log(1 + (count - df + 0.5) / (df + 0.5))
            for term, df in document_frequency.items()
        }

    def search(self, query: str, limit: int = 3) -> list[Hit]:
        query_terms = set(tokenize(query))
        scores: list[tuple[float, int]] = []
        for pk, counts in self.terms.items():
            score = 0.0
            norm = K1 * (1 - B + B * self.lengths[pk] / (self.average_length or 1))
            for term in query_terms:
                tf = counts.get(term)
                if tf:
                    score += self.idf[term] * tf * (K1 + 1) / (tf + norm)
            if score > 0:
                scores.append((score, pk))
        scores.sort(key=lambda item: (-item[0], item[1]))
        hits = []
        for score, pk in scores[:limit]:
            title, body = self.documents[pk]
            hits.append(Hit(pk, title, snippet(body), round(score, 3)))
        return hits


def snippet(body: str, length: int = 280) -> str:
    text = " ".join(body.split())
    if len(text) <= length:
        return text
    return text[:length].rsplit(" ", 1)[0] + "…"


# Another process's change to the knowledge base is searched within this many seconds; one
# made in this process, at once (the signals below).
FRESH_SECONDS = 1.0


@dataclass
class _Cached:
    signature: tuple
    index: Index
    checked_at: float


_cached: _Cached | None = None
_cache_lock = threading.Lock()


def fresh_index() -> Index | None:
    """The index, if it was checked against the database recently enough to be used as it
    is: a search then needs no trip to the database thread."""
    cached = _cached
    if cached and time.monotonic() - cached.checked_at < FRESH_SECONDS:
        return cached.index
    return None


def current_index() -> Index:
    """The index is rebuilt only when the knowledge base changed since the last search; a
    search asks the database whether it changed at most once every FRESH_SECONDS."""
    global _cached
    if (index := fresh_index()) is not None:
        return index
    signature = tuple(Document.objects.aggregate(n=Count("id"), at=Max("updated_at")).values())
    with _cache_lock:
        if _cached is None or _cached.signature != signature:
            index = Index(list(Document.objects.values_list("id", "title", "body")))
            _cached = _Cached(signature, index, 0.0)
        _cached.checked_at = time.monotonic()
        return _cached.index


def forget(**_kwargs: object) -> None:
    """The next search asks the database again."""
    with _cache_lock:
        if _cached is not None:
            _cached.checked_at = -FRESH_SECONDS


post_save.connect(forget, sender=Document, dispatch_uid="knowledge_forget_saved")
post_delete.connect(forget, sender=Document, dispatch_uid="knowledge_forget_deleted")


def search_documents(query: str, limit: int = 3) -> list[Hit]:
    return current_index().search(query, limit=limit)
