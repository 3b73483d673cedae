"""Bad input: every kind gets a clear 4xx problem and nothing is stored."""

import json

import pytest

from conversations.models import Conversation, Message, Turn
from memory.models import MemoryRecord
from policy.models import DecisionLog, MediaJob, PolicyRule

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(api, db):
    api.put("/api/v1/users/sam", {}, format="json")
    api.put("/api/v1/characters/rowan", {"name": "Rowan"}, format="json")
    conv = api.post(
        "/api/v1/conversations", {"user": "sam", "character": "rowan"}, format="json"
    ).json()
    turn = api.post(
        f"/api/v1/conversations/{conv['id']}/turns",
        {"turn_key": "t", "content": "hi"},
        format="json",
    ).json()
    return {
        "conv": conv["id"],
        "turn": turn["id"],
        "ctx": {"user": "sam", "character": "rowan", "conversation": conv["id"]},
    }


def counts():
    return (
        MemoryRecord.objects.count(),
        Message.objects.count(),
        Turn.objects.count(),
        Conversation.objects.count(),
        PolicyRule.objects.count(),
        MediaJob.objects.count(),
        DecisionLog.objects.count(),
    )


def deep(n):
    return "[" * n + "]" * n


MEM = "/api/v1/memories"
CASES = [
    # (method, path template, raw body or JSON, expected status)
    (
        "post",
        MEM,
        b'{"user": "sam", "key": "a.b", "value": "\xff\xfe", "scope": {"kind": "user"}}',
        400,
    ),
    ("post", MEM, b"\x00\x01\x02", 400),
    (
        "post",
        MEM,
        {"user": "sam", "key": "a.b", "value": "x\u0000y", "scope": {"kind": "user"}},
        400,
    ),
    (
        "post",
        MEM,
        {"user": "sam\u0000", "key": "a.b", "value": "x", "scope": {"kind": "user"}},
        400,
    ),
    ("post", MEM, '{"user": "sam", "key": "a.b", "value": ' + deep(100_000) + "}", 400),
    (
        "post",
        MEM,
        '{"user": "sam", "key": "a.b", "value": "x", "scope": '
        + '{"kind":' * 5000
        + '"user"'
        + "}" * 5000
        + "}",
        400,
    ),
    ("post", MEM, {"user": "sam", "key": "a.b", "value": 123, "scope": {"kind": "user"}}, 400),
    ("post", MEM, {"user": "sam", "key": ["a"], "value": "x", "scope": {"kind": "user"}}, 400),
    ("post", MEM, {"user": "sam", "key": "a.b", "value": "x", "scope": []}, 400),
    (
        "post",
        MEM,
        {"user": "sam", "key": "a.b", "value": "x", "scope": {"kind": "user"}, "sources": "abc"},
        400,
    ),
    (
        "post",
        MEM,
        {"user": "sam", "key": "a.b", "value": "x", "scope": {"kind": "user"}, "extra": 1},
        400,
    ),
    (
        "post",
        MEM,
        {"user": "sam", "key": "a.b", "value": "x" * 2001, "scope": {"kind": "user"}},
        400,
    ),
    ("post", MEM, {"user": "s" * 151, "key": "a.b", "value": "x", "scope": {"kind": "user"}}, 400),
    ("post", MEM, {"user": "nobody", "key": "a.b", "value": "x", "scope": {"kind": "user"}}, 400),
    (
        "post",
        MEM,
        {
            "user": "sam",
            "key": "a.b",
            "value": "x",
            "scope": {"kind": "character", "character": "nobody"},
        },
        400,
    ),
    (
        "post",
        MEM,
        {
            "user": "sam",
            "key": "a.b",
            "value": "x",
            "scope": {"kind": "user"},
            "valid_from": "10000-01-01T00:00:00Z",
        },
        400,
    ),
    (
        "post",
        MEM,
        {
            "user": "sam",
            "key": "a.b",
            "value": "x",
            "scope": {"kind": "user"},
            "valid_from": "2026-13-45T00:00:00Z",
        },
        400,
    ),
    ("post", MEM, [1, 2, 3], 400),
    ("post", MEM, "null", 400),
    ("post", "/api/v1/memory/resolve", {"context": {"user": "sam", "character": "nobody"}}, 400),
    ("post", "/api/v1/memory/resolve", {"context": {"user": "sam", "scene": "alone"}}, 400),
    ("post", "/api/v1/memory/resolve", {"context": "sam"}, 400),
    ("post", "/api/v1/memory/resolve", {"context": {"user": "sam"}, "keys": "pet.name"}, 400),
    (
        "post",
        "/api/v1/policy/decide",
        {"context": {"user": "sam"}, "capability": "tone.sarcastic", "requested_by": "user"},
        400,
    ),
    (
        "post",
        "/api/v1/policy/decide",
        {"context": {"user": "sam"}, "capability": "tone.playful", "requested_by": "robot"},
        400,
    ),
    (
        "post",
        "/api/v1/policy/rules",
        {
            "user": "sam",
            "capability": "media.voice",
            "effect": "maybe",
            "source": "explicit-user",
            "scope": {"kind": "global"},
        },
        400,
    ),
    (
        "post",
        "/api/v1/policy/rules",
        {
            "user": "sam",
            "capability": "media.voice",
            "effect": "allow",
            "source": "explicit-user",
            "scope": {"kind": "global"},
            "valid_from": "2026-01-02T00:00:00Z",
            "valid_until": "2026-01-01T00:00:00Z",
        },
        400,
    ),
    (
        "post",
        "/api/v1/media-jobs",
        {"context": {"user": "sam"}, "capability": "media.voice", "requested_by": "user"},
        400,
    ),
    ("post", "/api/v1/conversations", {"user": "sam", "character": "nobody"}, 400),
    ("post", "/api/v1/conversations", {"user": "nobody", "character": "rowan"}, 400),
    ("post", "/api/v1/conversations/{conv}/turns", {"turn_key": "", "content": "x"}, 400),
    ("post", "/api/v1/conversations/{conv}/turns", {"turn_key": "k" * 256, "content": "x"}, 400),
    (
        "post",
        "/api/v1/conversations/{conv}/turns",
        {"turn_key": "k", "content": "x", "scene": "s" * 101},
        400,
    ),
    ("post", "/api/v1/turns/{turn}/reply", {"content": ""}, 400),
    ("post", "/api/v1/turns/{turn}/reply", {"content": {"text": "x"}}, 400),
    ("get", "/api/v1/turns/{turn}/prompt-plan?budget=100&now=0001-01-01T00:00:00Z", None, 200),
    ("get", "/api/v1/turns/{turn}/prompt-plan?budget=100&now=9999-12-31T23:59:59Z", None, 200),
    ("get", "/api/v1/turns/{turn}/prompt-plan?budget=99999999999", None, 400),
    ("get", "/api/v1/turns/{turn}/prompt-plan?budget=100&memory_share=nan", None, 400),
    ("get", "/api/v1/memory/history?user=sam&key=pet.name&scope=nowhere", None, 400),
    ("get", "/api/v1/memory/ask?user=sam", None, 400),
    ("get", "/api/v1/memories?user=sam&limit=-1", None, 400),
    ("put", "/api/v1/users/bad%20ref", {}, 400),
    ("put", "/api/v1/characters/x", {"name": ""}, 400),
    (
        "post",
        "/api/v1/users/sam/import",
        {"format": "companion-memory/1", "user": {"ref": "sam"}, "memories": [{"id": "x"}]},
        400,
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), CASES)
def test_it_answers_bad_input_with_a_clear_4xx_and_stores_nothing(
    api, world, method, path, body, status
):
    path = path.format(**world)
    before = counts()
    kwargs = {}
    if body is not None:
        if isinstance(body, bytes):
            kwargs = {"data": body, "content_type": "application/json"}
        elif isinstance(body, str):
            kwargs = {"data": body.encode(), "content_type": "application/json"}
        else:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
    response = getattr(api, method)(path, **kwargs)
    assert response.status_code == status, (response.status_code, response.content[:300])
    if status >= 400:
        assert response["Content-Type"] == "application/problem+json"
        assert response.json()["code"] == "validation_error"
        assert response.json()["detail"]
        after = counts()
        assert after[:6] == before[:6], "bad input stored something"


def test_it_accepts_far_past_and_future_valid_times_without_crashing(api, world):
    for when in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"):
        r = api.post(
            MEM,
            {
                "user": "sam",
                "key": "story.era",
                "value": when[:4],
                "scope": {"kind": "user"},
                "valid_from": when,
            },
            format="json",
        )
        assert r.status_code == 201, r.content
    r = api.post(
        "/api/v1/memory/resolve",
        {"context": {**world["ctx"], "now": "9999-12-31T23:59:59Z"}},
        format="json",
    )
    assert r.status_code == 200


@pytest.mark.parametrize(
    "path", ["/api/v1/users/a%00b/export", "/api/v1/users/" + "x" * 300 + "/export"]
)
def test_it_answers_an_impossible_user_ref_in_a_path_with_404(api, world, path):
    """A NUL or an overlong ref in a path is simply nobody (PostgreSQL could not compare it)."""
    r = api.get(path)
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert api.delete(path.removesuffix("/export")).status_code == 404
