"""A burst of connections waits instead of being dropped (project.serve): the listening
socket queues GLASSBOX_LISTEN_BACKLOG of them, not Twisted's 50."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.servers import serve

pytestmark = [pytest.mark.server, pytest.mark.own_site]


def backlog_of(url: str) -> int:
    """The listening socket's backlog, as the kernel reports it (ss's Send-Q column)."""
    port = url.rsplit(":", 1)[1]
    shown = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(shown[2])


def test_a_server_queues_a_burst_of_connections(tmp_path):
    (tmp_path / "default").mkdir()
    (tmp_path / "set").mkdir()
    with serve(tmp_path / "default") as server:
        assert backlog_of(server.url) == 1024
    with serve(tmp_path / "set", GLASSBOX_LISTEN_BACKLOG="200") as server:
        assert backlog_of(server.url) == 200
