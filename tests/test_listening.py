"""A burst of connections waits instead of being dropped (project.serve): the listening
socket queues GLASSBOX_LISTEN_BACKLOG of them, not Twisted's 50."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.support.servers import serve

pytestmark = [
    pytest.mark.server,
    pytest.mark.own_site,
    # .ci/run installs iproute2 where `ss` is missing: there the test must run.
    pytest.mark.skipif(
        shutil.which("ss") is None and not os.environ.get("CI"), reason="needs ss (iproute2)"
    ),
]


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
