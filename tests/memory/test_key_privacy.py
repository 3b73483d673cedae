"""SPEC §12: a key's free part is private text. `people.zebrina.works_at` is logged as
`people.*.works_at`, through one function (memory.domain.loggable_key), so a person's name —
one the user later asks to forget — never reaches a log record."""

import logging

import pytest

from memory.domain import loggable_key
from tests.helpers import Collect

NAME = "zebrina"


@pytest.mark.parametrize(
    ("key", "logged"),
    [
        ("people.zebrina.works_at", "people.*.works_at"),
        ("people.zebrina.lives_in", "people.*.lives_in"),
        ("people.zebrina", "people.*"),
        ("people", "people"),
        ("user.works_at", "user.works_at"),
        ("basil_plant.name", "basil_plant.name"),
        ("Bad Key", "<invalid-key>"),
        ("", "<invalid-key>"),
        (None, "<invalid-key>"),
    ],
)
def test_it_masks_the_free_part_of_a_key(key, logged):
    assert loggable_key(key) == logged


@pytest.mark.django_db
def test_it_never_logs_a_persons_name_from_a_key(api):
    handler = Collect()
    root = logging.getLogger()
    names = ("", "companion", "django", "django.request", "axes")
    old = {name: logging.getLogger(name).level for name in names}
    root.addHandler(handler)
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        api.put("/api/v1/users/sam", {}, format="json")
        api.put("/api/v1/characters/rowan", {"name": "Rowan"}, format="json")
        conv = api.post(
            "/api/v1/conversations", {"user": "sam", "character": "rowan"}, format="json"
        ).json()["id"]
        turn = api.post(
            f"/api/v1/conversations/{conv}/turns",
            {"turn_key": "t1", "content": "Zebrina works at Acme."},
            format="json",
        ).json()
        memory = turn["extracted"][0]["memory"]
        assert memory["key"] == f"people.{NAME}.works_at"
        key = memory["key"]
        api.get("/api/v1/memory/ask", {"user": "sam", "q": "Where does Zebrina work?"})
        api.get("/api/v1/memory/history", {"user": "sam", "key": key})
        confirmed = api.post(f"/api/v1/memories/{memory['id']}/confirm", {}, format="json").json()[
            "memory"
        ]
        corrected = api.post(
            f"/api/v1/memories/{confirmed['id']}/correct", {"value": "Initech"}, format="json"
        ).json()["memory"]
        api.post(
            "/api/v1/memories",
            {
                "user": "sam",
                "key": f"people.{NAME}.lives_in",
                "value": "Oslo",
                "scope": {"kind": "user"},
            },
            format="json",
        )
        api.post(f"/api/v1/memories/{corrected['id']}/retract", {}, format="json")
        tombstone = api.post(
            f"/api/v1/memories/{corrected['id']}/forget", {"everywhere": True}, format="json"
        ).json()
        api.post(
            "/api/v1/memories",
            {
                "user": "sam",
                "key": key,
                "value": "Acme",
                "scope": {"kind": "user"},
                "valid_from": "2020-01-01T00:00:00Z",
            },
            format="json",
        )  # blocked
        api.post(
            "/api/v1/memory/resolve",
            {"context": {"user": "sam", "character": "rowan", "conversation": conv}},
            format="json",
        )
        api.get(f"/api/v1/turns/{turn['id']}/prompt-plan", {"budget": 500})
        api.delete(f"/api/v1/tombstones/{tombstone['id']}")
        api.post(
            "/api/v1/memories",
            {"user": "sam", "key": "people.Zebrina!", "value": "x", "scope": {"kind": "user"}},
            format="json",
        )  # refused key
        api.get("/api/v1/users/sam/export")
    finally:
        root.removeHandler(handler)
        for name, level in old.items():
            logging.getLogger(name).setLevel(level)
    key_lines = [r for r in handler.records if "key=" in r.getMessage()]
    assert len(key_lines) >= 6, "the memory writers did log their keys"
    assert any("key=people.*.works_at" in r.getMessage() for r in key_lines)
    for record in handler.records:
        text = record.getMessage() + " " + repr(record.args) + " " + repr(record.__dict__)
        assert NAME not in text.casefold(), (record.name, record.getMessage()[:200])
