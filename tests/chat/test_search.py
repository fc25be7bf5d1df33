from __future__ import annotations

import pytest

from chat.knowledge.search import search_documents, tokenize
from chat.models import Document

pytestmark = pytest.mark.django_db


def titles(query: str) -> list[str]:
    return [hit.title for hit in search_documents(query)]


def test_a_salary_question_ranks_salary_documents_first(knowledge_base):
    found = titles("How do I negotiate my salary?")
    assert found[0].startswith("Salary negotiation")
    assert found[1].startswith("Salary negotiation")


def test_ranking_is_not_a_substring_match(knowledge_base):
    # "negotiating" and "salaries" appear in no title as such.
    assert titles("tips for negotiating salaries")[0].startswith("Salary negotiation")


def test_italian_and_chinese_questions_find_their_documents(knowledge_base):
    assert titles("Come posso negoziare lo stipendio?")[0] == "Negoziare lo stipendio"
    assert titles("我該如何準備面試？")[0] == "面試準備"


def test_a_question_outside_the_knowledge_base_finds_nothing(knowledge_base):
    assert search_documents("What is the capital of France?") == []


def test_stopwords_alone_match_nothing(knowledge_base):
    assert search_documents("how do I do it") == []


def test_a_document_added_in_admin_is_found_at_once(knowledge_base):
    assert search_documents("parental leave") == []
    Document.objects.create(title="Parental leave policy", body="Weeks of parental leave.")
    assert titles("parental leave") == ["Parental leave policy"]


def test_tokens_fold_case_accents_and_word_forms():
    assert tokenize("Négociation") == tokenize("negociations")
    assert tokenize("薪資談判") == ["薪資", "資談", "談判"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("inline_up_to", [500, 0], ids=["searched inline", "searched in a thread"])
def test_the_tool_finds_the_same_documents_inline_or_in_a_thread(
    knowledge_base, monkeypatch, inline_up_to
):
    """A small index known current is searched on the event loop, a large one in the
    database thread: the same answer either way, and a new document found at once."""
    from asgiref.sync import async_to_sync

    from chat.tools import search as tool
    from tests.support.tool_context import tool_context

    monkeypatch.setattr(tool, "INLINE_SEARCH_DOCUMENTS", inline_up_to)
    run = async_to_sync(tool.run_search_documents)

    def search(arguments):
        return run(arguments, tool_context())

    titles("warm the index")  # known current from here on
    arguments = tool.SearchArguments(query="How do I negotiate my salary?")
    found = search(arguments).content
    assert [hit["title"] for hit in found] == titles("How do I negotiate my salary?")
    Document.objects.create(title="Zebra husbandry", body="Zebras eat grass.")
    zebra = search(tool.SearchArguments(query="zebra grass")).content
    assert zebra[0]["title"] == "Zebra husbandry"
