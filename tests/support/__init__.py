"""Helpers shared by the test modules."""

from __future__ import annotations

QUESTION = "How do I negotiate my salary?"
