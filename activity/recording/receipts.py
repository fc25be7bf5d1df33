"""Receipts of approvals: what exactly a person approved, bound to the arguments by a
fingerprint, so an auditor can tell that what ran is what was approved.

A fingerprint is SHA-256 over the arguments in the JSON Canonicalization Scheme (RFC 8785):
the same object gives the same bytes whatever its key order, spacing or number spelling, in
any language that implements the RFC. Plain Python, no ORM: the agent checks it just before a
call runs, the turns compute it for the card, the evidence export recomputes it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

PREFIX = "sha256:"


class NotFingerprintable(ValueError):
    """Arguments the canonical form cannot hold (an integer past 2**53, NaN, a non-string
    key): refused rather than hashed in some other, unverifiable form."""


def fingerprint(arguments: Any) -> str:
    """`sha256:` and the hex digest of the arguments' canonical JSON (RFC 8785)."""
    try:
        canonical = rfc8785.dumps(arguments)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as problem:
        raise NotFingerprintable(str(problem)) from problem
    return PREFIX + hashlib.sha256(canonical).hexdigest()


def fingerprint_or_blank(arguments: Any) -> str:
    """The fingerprint, or blank for arguments the canonical form cannot hold (then nothing
    binds them, and the card says so)."""
    try:
        return fingerprint(arguments)
    except NotFingerprintable:
        return ""


def receipt_json(fingerprint: str, edited: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A decision's receipt as its event's `arguments` column seals it: None for a decision
    recorded before receipts (or one with nothing to bind, a timeout)."""
    if not fingerprint:
        return None
    receipt: dict[str, Any] = {"fingerprint": fingerprint}
    if edited is not None:
        receipt["edited_arguments"] = dict(edited)
    return receipt


def receipt_check(
    decision: Mapping[str, Any], asked: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """An approval's receipt for the evidence: the fingerprint it recorded beside the one
    recomputed now from the sealed arguments it approved (the edited ones, else the call's as
    the model asked). `decision` and `asked` are the stored event rows (their columns)."""
    receipt = decision.get("arguments")
    if not isinstance(receipt, Mapping) or "fingerprint" not in receipt:
        return None
    edited = receipt.get("edited_arguments")
    approved = edited if edited is not None else (asked or {}).get("arguments")
    try:
        recomputed = fingerprint(approved) if approved is not None else ""
    except NotFingerprintable:
        recomputed = ""
    return {
        "call_id": decision.get("call_id"),
        "tool": decision.get("tool"),
        "decision": decision.get("state"),
        "by": decision.get("message"),
        "at": decision.get("created_at"),
        "reason": decision.get("result_summary"),
        "fingerprint": receipt["fingerprint"],
        "edited": edited is not None,
        "edited_arguments": edited,
        "asked_arguments": (asked or {}).get("arguments"),
        "matches": recomputed == receipt["fingerprint"],
    }
