"""The stored format does not move: rows of every kind of event seal to the hashes they were
sealed with when these were written (so existing chains still verify), and every event's JSON
form is the same, key for key and in the same order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from activity.models import ActivityEvent, ActivityFeed
from activity.recording.chain import GENESIS, SEAL_V1, SEAL_V2
from activity.recording.events import from_json, to_json
from tests.support.stored_format import AT, RECORDED, WIRE

HASHES = {
    SEAL_V1: [
        "00b217e38e0475c96c93168d438ec89a529e62f617763b82ca80d08616152d7e",
        "b86d439df99ce3259b66b98192b489fac4e2275c3e6aa27423e9f3e9802d134a",
        "f79b3f5bcb0dbe661418998f1058a70348b3f267f8dee9f7b26a3b226bafce83",
        "29837faa1b9062d7a5db93b65877b160d2ba06d7ad6c59cb0982ca754f102e41",
        "55d19364997fac1b55f7dbda7646e5f7c772666ded902c4b1f4944f26400161b",
        "1a3a53f0e0b1202b1cdf81239c72c37ace2a16cd0ff12b2329604a09fa877cd5",
        "1393a4610af9a6dcf9b9b58fea4afabace4403f5f14e9bd1a7eeadd28d30ede0",
        "6da8fe7ca0669ff59483293144a910c25b7996dd22f5b1340c047bbebb6844ff",
    ],
    SEAL_V2: [
        "566f2465c512c9fcb31dac9c6f0bce769cfd08e2659404d186c9f02a9b1afbba",
        "984d1afeaddbc06b713c905eb64a566b4d5948de88d8e676c8b4f5ccd115c5d4",
        "0f0cde340c79918591397e5cdfb3a38a2a989eada2e067649eba01f0991ccc35",
        "6cc6be1e448ef5bfabc9fcbe2ab83bed9d6a8d252be0c6cedaae0710a3f8b1f0",
        "29abb849acc41f68a3fe4342ab663c1ddd6fb8987cd9acc757572cb86b309ac4",
        "e1d156079659e93acd9d66b954bdeaa0bad57e9d7bd782ca96bbe38328be9af2",
        "5276a14c5221e5282aa923b71160a92983903c997e104a9f991178d4175cc73d",
        "d59a90e08e4083e78d09cbd521135fc1d4bce7b85a82d829d3c541f5a1ea900c",
    ],
}

# One line per event of WIRE, as json.dumps wrote its JSON form.
JSON = (Path(__file__).parents[1] / "support" / "stored_format.jsonl").read_text("utf-8")


@pytest.mark.parametrize("version", [SEAL_V1, SEAL_V2])
def test_rows_of_every_kind_seal_to_the_hashes_stored_chains_hold(version):
    head, hashes = GENESIS, []
    for event in RECORDED:
        row = ActivityEvent.from_event(ActivityFeed(pk=7), event)
        row.created_at, row.seal_version = AT, version
        head = row.seal(head).chain
        hashes.append(head)
    assert hashes == HASHES[version]


def test_every_event_has_the_json_form_it_had():
    assert [json.dumps(to_json(event), ensure_ascii=False) for event in WIRE] == JSON.splitlines()


@pytest.mark.parametrize("event", WIRE, ids=lambda event: type(event).__name__)
def test_every_event_reads_back_from_its_json_as_it_was_sent(event):
    assert to_json(from_json(to_json(event))) == to_json(event)


@pytest.mark.parametrize("event", RECORDED, ids=lambda event: type(event).__name__)
def test_every_recorded_event_reads_back_from_its_row_as_it_was_recorded(event):
    assert ActivityEvent.from_event(ActivityFeed(pk=7), event).to_event() == event
