"""The test harness's own promises: a server a test starts is gone when the test ends, what it
wrote is shown with the failure, and it is taken to listen only once it does."""

from __future__ import annotations

import socket

import pytest

from tests.support.ports import accepting, free_port
from tests.support.servers import serve

pytestmark = pytest.mark.server


def test_a_failing_test_leaves_no_server_running_and_shows_what_it_wrote(tmp_path, capsys):
    with pytest.raises(AssertionError), serve(tmp_path) as server:
        assert server.process.poll() is None
        raise AssertionError("the test failed")
    assert server.process.poll() is not None
    shown = capsys.readouterr().out
    assert f"What the server at {server.url} wrote" in shown
    assert f"Listening on TCP address {server.url.removeprefix('http://')}" in shown


def from_its_own_port(address, timeout=None, connect=socket.create_connection):
    """A connection from the very port it goes to, as the kernel now and then picks."""
    return connect(address, timeout, source_address=address)


def test_a_port_whose_connection_reaches_itself_is_not_taken_for_a_server(monkeypatch):
    # Nobody listens on either port, and yet TCP's simultaneous open connects.
    with from_its_own_port(("127.0.0.1", free_port()), 1) as connection:
        assert connection.getsockname() == connection.getpeername()
    port = free_port()
    monkeypatch.setattr(socket, "create_connection", from_its_own_port)
    assert not accepting(port)
