"""Provider failures met on real sockets, through the configured client and its HTTP
transport (not a fault-injecting one): each turn ends with the same words for people as on
the SDK's httpx transport, and the conversation stays usable."""

from __future__ import annotations

import pytest

from chat.models import Message
from chat.turns.deps import Dependencies, configured_client
from tests.support import socket_faults
from tests.support.turns import run_turn

pytestmark = pytest.mark.django_db(transaction=True)
BROKE_OFF = "The model provider's reply broke off before it was finished"


@pytest.fixture
def provider(settings):
    settings.OPENAI_API_KEY = "sk-test"
    settings.GLASSBOX_PROVIDER_RETRIES = 0


def ask(conversation, url, settings) -> Message:
    settings.OPENAI_BASE_URL = url
    return run_turn(conversation, "Hi", Dependencies(client_factory=configured_client))


def last_line(answer: Message) -> str:
    return answer.answer_feed.events.order_by("-seq")[0].message


def test_a_refused_connection_says_the_provider_could_not_be_reached(
    provider, settings, alice_conversation
):
    answer = ask(alice_conversation, socket_faults.refused_url(), settings)
    assert answer.state == Message.State.FAILED
    assert last_line(answer) == "Could not reach the model provider"


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        # No time passed: the provider is unreachable, not slow (chat.agent.faults).
        (socket_faults.closes_before_answering, "Could not reach the model provider"),
        (socket_faults.resets_before_answering, "Could not reach the model provider"),
        (socket_faults.closes_mid_stream, BROKE_OFF),
        (socket_faults.resets_mid_stream, BROKE_OFF),
    ],
    ids=["closed before", "reset before", "closed mid-stream", "reset mid-stream"],
)
def test_a_connection_cut_says_whether_the_provider_was_reached(
    provider, settings, alice_conversation, behaviour, said
):
    with socket_faults.faulty_provider(behaviour) as url:
        answer = ask(alice_conversation, url, settings)
    assert answer.state == Message.State.FAILED
    assert last_line(answer) == said


@pytest.mark.parametrize("after_text", [False, True], ids=["first byte", "mid-stream"])
def test_a_provider_that_stalls_past_the_read_timeout_did_not_answer_in_time(
    provider, settings, alice_conversation, after_text
):
    settings.GLASSBOX_READ_TIMEOUT = 0.5  # the provider never answers: no margin is involved
    stall = socket_faults.Stalls(after_text=after_text)
    with socket_faults.faulty_provider(stall) as url:
        try:
            answer = ask(alice_conversation, url, settings)
        finally:
            stall.release()
    assert answer.state == Message.State.FAILED
    assert last_line(answer) == "The model provider did not answer in time"
    assert answer.content == ("Partial answer" if after_text else "")


def test_a_rate_limited_or_failing_request_is_retried_and_the_turn_completes(
    provider, settings, alice_conversation
):
    settings.GLASSBOX_PROVIDER_RETRIES = 2
    script = socket_faults.Script(
        [
            socket_faults.error_reply("429 Too Many Requests", "slow down", "retry-after-ms: 1"),
            socket_faults.error_reply("503 Service Unavailable", "busy", "retry-after-ms: 1"),
        ]
    )
    with socket_faults.faulty_provider(script) as url:
        answer = ask(alice_conversation, url, settings)
    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Hello")
    assert len(script.request_lines) == 3


def test_a_rate_limit_that_outlasts_the_retries_says_so_in_the_providers_words(
    provider, settings, alice_conversation
):
    script = socket_faults.Script(
        [socket_faults.error_reply("429 Too Many Requests", "quota exhausted")]
    )
    with socket_faults.faulty_provider(script) as url:
        answer = ask(alice_conversation, url, settings)
    assert answer.state == Message.State.FAILED
    assert last_line(answer) == (
        "The model provider is rate limiting us; try again shortly: “quota exhausted”"
    )


def test_a_redirected_request_is_followed_with_its_body(provider, settings, alice_conversation):
    script = socket_faults.Script(
        [b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v2/chat/completions\r\n"
         b"content-length: 0\r\n\r\n"]
    )  # fmt: skip
    with socket_faults.faulty_provider(script) as url:
        answer = ask(alice_conversation, url, settings)
    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Hello")
    assert script.request_lines == [
        "POST /v1/chat/completions HTTP/1.1",
        "POST /v2/chat/completions HTTP/1.1",
    ]


def test_a_provider_whose_certificate_the_environment_trusts_answers_over_tls(
    provider, settings, alice_conversation, tmp_path, monkeypatch
):
    tls, certificate = socket_faults.tls_for_loopback(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    with socket_faults.faulty_provider(socket_faults.Script([]), tls=tls) as url:
        answer = ask(alice_conversation, url, settings)
    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Hello")


def test_a_provider_whose_certificate_is_not_trusted_could_not_be_reached(
    provider, settings, alice_conversation, tmp_path, monkeypatch
):
    tls, _ = socket_faults.tls_for_loopback(tmp_path)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with socket_faults.faulty_provider(socket_faults.Script([]), tls=tls) as url:
        answer = ask(alice_conversation, url, settings)
    assert answer.state == Message.State.FAILED
    assert last_line(answer) == "Could not reach the model provider"


def test_an_https_proxy_from_the_environment_tunnels_to_the_provider(
    provider, settings, alice_conversation, tmp_path, monkeypatch
):
    tls, certificate = socket_faults.tls_for_loopback(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = socket_faults.TunnelProxy()
    with (
        socket_faults.faulty_provider(socket_faults.Script([]), tls=tls) as url,
        socket_faults.faulty_provider(proxy) as proxy_url,
    ):
        monkeypatch.setenv("HTTPS_PROXY", proxy_url.removesuffix("/v1"))
        answer = ask(alice_conversation, url, settings)
    assert (answer.state, answer.content) == (Message.State.COMPLETE, "Hello")
    assert proxy.targets == [f"CONNECT {url.removeprefix('https://').removesuffix('/v1')}"]


def test_the_provider_clients_tls_context_follows_what_it_is_given(monkeypatch):
    from chat.agent.provider_http import ProviderHttpClient

    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/glassbox-ca.pem")
    with pytest.raises(FileNotFoundError):
        ProviderHttpClient()  # the environment's certificates, as httpx2 reads them
    # A context given, or one made without the environment when told, reads none of it.
    ProviderHttpClient(verify=False)
    ProviderHttpClient(trust_env=False)
