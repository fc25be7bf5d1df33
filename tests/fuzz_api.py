"""The API fuzzer against a live server: `make fuzz` (CI runs it). Starts Glassbox on a fresh
database, gives the demo user a token, and runs schemathesis over every operation of the
OpenAPI schema with all its checks; exits with schemathesis's status. FUZZ_SEED, if set, is
its seed (CI sets one a commit, so that a run can be repeated)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.servers import ROOT, demo_token, serve

EXAMPLES = "40"


def main(st: str) -> int:
    with tempfile.TemporaryDirectory() as work, serve(Path(work)) as server:
        token = demo_token(server.env)
        command = [
            st, "run", f"{server.url}/api/schema/",
            "--header", f"Authorization: Token {token}",
            "--checks", "all",
            "--max-examples", EXAMPLES,
            "--request-timeout", "30",
        ]  # fmt: skip
        if os.environ.get("FUZZ_SEED"):
            command += ["--seed", os.environ["FUZZ_SEED"]]  # CI's: one a commit
        return subprocess.run(command, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
