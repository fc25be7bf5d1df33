"""The test harness's own promise: a server a test starts is gone when the test ends."""

from __future__ import annotations

import pytest

from tests.support.servers import serve

pytestmark = pytest.mark.server


def test_a_failing_test_leaves_no_server_running(tmp_path):
    with pytest.raises(AssertionError), serve(tmp_path) as server:
        assert server.process.poll() is None
        raise AssertionError("the test failed")
    assert server.process.poll() is not None
