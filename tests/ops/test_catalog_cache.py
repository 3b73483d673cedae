"""Catalog data cached per process (config.catalog; DESIGN, storage): the key registry,
capabilities, product-default rules and characters are read once per process and read again
only when the catalog version changes — which database triggers do on any change, however it
is made (the ORM, `queryset.update()`, `bulk_create`, raw SQL), so every worker sees it on its
next request. A user's own rules are not catalog data and leave the version alone."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.models import CatalogVersion
from conversations.models import Character
from memory.models import KeyDefinition
from policy.models import Capability, DefaultsPolicyVersion, PolicyRule
from tests.factories import CharacterFactory, ConversationFactory, UserFactory, at

pytestmark = pytest.mark.django_db

CATALOG_TABLES = (
    "memory_keydefinition",
    "policy_capability",
    "policy_defaultspolicyversion",
    "conversations_character",
)


def version() -> int:
    return CatalogVersion.objects.get(pk=1).version


def raw(sql: str, params=()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def changes_version(change) -> bool:
    before = version()
    change()
    return version() != before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda: CharacterFactory(slug="new-one"), id="character created (ORM)"),
        pytest.param(
            lambda: Character.objects.filter(slug="rowan").update(name="Rowan II"),
            id="character update()",
        ),
        pytest.param(
            lambda: Character.objects.bulk_create(
                [
                    Character(slug=f"b{i}", name="B", created_at=at("2026-01-01T00:00"))
                    for i in range(3)
                ]
            ),
            id="characters bulk_create",
        ),
        pytest.param(
            lambda: raw("UPDATE conversations_character SET name = 'Raw' WHERE slug = 'rowan'"),
            id="character raw SQL",
        ),
        pytest.param(
            lambda: Character.objects.filter(slug="unused").delete(), id="character deleted"
        ),
        pytest.param(
            lambda: KeyDefinition.objects.create(key="pet.name", label="Pet"), id="key registered"
        ),
        pytest.param(
            lambda: KeyDefinition.objects.filter(key="user.preferred_name").update(label="Name"),
            id="key update()",
        ),
        pytest.param(
            lambda: raw("UPDATE memory_keydefinition SET pinned = NOT pinned"), id="keys raw SQL"
        ),
        pytest.param(
            lambda: Capability.objects.filter(name="media.voice").update(question="Talk?"),
            id="capability update()",
        ),
        pytest.param(
            lambda: raw("DELETE FROM policy_capability WHERE name = 'tone.playful'"),
            id="capability raw delete",
        ),
        pytest.param(
            lambda: DefaultsPolicyVersion.objects.filter(pk=1).update(version=7),
            id="defaults version",
        ),
        pytest.param(
            lambda: PolicyRule.objects.create(
                user=None,
                capability_id="media.voice",
                effect="deny",
                source="product-default",
                scope_kind="global",
                valid_from=at("2026-01-01T00:00"),
                created_at=at("2026-01-01T00:00"),
            ),
            id="product default created",
        ),
    ],
)
def test_it_changes_the_version_on_every_kind_of_catalog_change(change):
    CharacterFactory(slug="rowan")
    CharacterFactory(slug="unused")
    assert changes_version(change)


def test_it_does_not_count_a_users_own_rule_as_catalog_data():
    wren = UserFactory(username="wren")
    rule = lambda: PolicyRule.objects.create(  # noqa: E731
        user=wren,
        capability_id="media.voice",
        effect="allow",
        source="explicit-user",
        scope_kind="global",
        valid_from=at("2026-01-01T00:00"),
        created_at=at("2026-01-01T00:00"),
    )
    assert not changes_version(rule)
    assert not changes_version(lambda: PolicyRule.objects.filter(user=wren).update(effect="deny"))
    assert not changes_version(lambda: PolicyRule.objects.filter(user=wren).delete())
    default = PolicyRule.objects.create(
        user=None,
        capability_id="media.voice",
        effect="deny",
        source="product-default",
        scope_kind="global",
        valid_from=at("2026-01-01T00:00"),
        created_at=at("2026-01-01T00:00"),
    )
    assert changes_version(
        lambda: PolicyRule.objects.filter(pk=default.pk).update(revoked_at=at("2026-02-01T00:00"))
    )


def conversation_create(api, character: str):
    return api.post(
        "/api/v1/conversations", {"user": "wren", "character": character}, format="json"
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda: CharacterFactory(slug="later"), id="ORM"),
        pytest.param(
            lambda: Character.objects.filter(slug="rowan").update(slug="later"), id="update()"
        ),
        pytest.param(
            lambda: raw(
                "INSERT INTO conversations_character (slug, name, created_at) VALUES (%s, %s, %s)",
                ["later", "Later", at("2026-01-01T00:00")],
            ),
            id="raw SQL",
        ),
    ],
)
def test_it_shows_a_warm_process_a_change_on_its_next_request(api, change):
    UserFactory(username="wren")
    CharacterFactory(slug="rowan")
    assert conversation_create(api, "rowan").status_code == 201  # the characters are now cached
    assert conversation_create(api, "later").status_code == 400  # unknown, from the warm cache
    change()
    assert conversation_create(api, "later").status_code == 201


def test_it_shows_a_page_a_change_made_after_its_process_cached_the_catalog(client):
    """Pages have no token: they read the version once, lazily, when they first use catalog
    data. The memory page words a key with the registry's label."""
    from memory.services import memory_assert

    user = UserFactory(username="wren")
    KeyDefinition.objects.update_or_create(key="pet.name", defaults={"label": "Pet's name"})
    from conversations.scopes import Scope

    memory_assert(
        user=user,
        key="pet.name",
        value="Harbor",
        scope=Scope("user"),
        authority="user-confirmed",
        confidence=1.0,
    )
    client.force_login(user)
    assert "Pet&#x27;s name" in client.get("/memories/").content.decode()
    raw("UPDATE memory_keydefinition SET label = 'Plant name' WHERE key = 'pet.name'")
    assert "Plant name" in client.get("/memories/").content.decode()


def catalog_queries(captured) -> list[str]:
    """Reads of catalog tables (a conversation's join to its character is the conversation's
    read), and reads of product-default rules."""
    sqls = [q["sql"] for q in captured.captured_queries]
    return [
        s
        for s in sqls
        if any(f'FROM "{t}"' in s for t in CATALOG_TABLES)
        or ('FROM "policy_policyrule"' in s and '"user_id" IS NULL' in s)
    ]


def test_it_reads_no_catalog_data_in_a_warm_decide(api):
    """The capability, the character and the product defaults (with their version) come from
    the cache: the decide reads the conversation with its user, the user's policy version and
    own rules, and writes the log."""
    wren = UserFactory(username="wren")
    conversation = ConversationFactory(user=wren, character=CharacterFactory(slug="rowan"))
    PolicyRule.objects.create(
        user=None,
        capability_id="media.voice",
        effect="ask",
        source="product-default",
        scope_kind="global",
        valid_from=at("2026-01-01T00:00"),
        created_at=at("2026-01-01T00:00"),
    )
    body = {
        "context": {
            "user": "wren",
            "character": "rowan",
            "conversation": str(conversation.pk),
            "now": "2026-12-01T00:00:00Z",
        },
        "capability": "media.voice",
        "requested_by": "user",
    }
    with CaptureQueriesContext(connection) as cold:
        first = api.post("/api/v1/policy/decide", body, format="json").json()
    assert catalog_queries(cold)  # the first request of a cold process loads them
    with CaptureQueriesContext(connection) as warm:
        again = api.post("/api/v1/policy/decide", body, format="json").json()
    assert catalog_queries(warm) == []
    # token+version, the conversation with its user, savepoint, user version, own rules, log,
    # release
    assert len(warm) == 7
    assert again["effect"] == first["effect"] == "ask" and again["question"] == first["question"]
    assert again["policy_version"] == first["policy_version"]


def test_it_decides_with_a_cached_default_as_with_a_stored_one(api):
    """The product defaults filtered in Python give the decision the query gave: scope (a
    character default only for its character), time window and revocation."""
    wren = UserFactory(username="wren")
    rowan, marlowe = CharacterFactory(slug="rowan"), CharacterFactory(slug="marlowe")
    conversation = ConversationFactory(user=wren, character=rowan)
    common = {
        "user": None,
        "capability_id": "media.voice",
        "source": "product-default",
        "created_at": at("2026-01-01T00:00"),
    }
    PolicyRule.objects.create(
        effect="allow", scope_kind="global", valid_from=at("2026-01-01T00:00"), **common
    )
    PolicyRule.objects.create(
        effect="deny",
        scope_kind="character",
        character=marlowe,
        valid_from=at("2026-01-01T00:00"),
        **common,
    )
    PolicyRule.objects.create(
        effect="deny",
        scope_kind="global",
        valid_from=at("2026-01-01T00:00"),
        valid_until=at("2026-06-01T00:00"),
        **common,
    )
    PolicyRule.objects.create(
        effect="deny",
        scope_kind="global",
        valid_from=at("2026-01-01T00:00"),
        revoked_at=at("2026-03-01T00:00"),
        **common,
    )

    def decide(now):
        body = {
            "context": {
                "user": "wren",
                "character": "rowan",
                "conversation": str(conversation.pk),
                "now": now,
            },
            "capability": "media.voice",
            "requested_by": "user",
        }
        got = api.post("/api/v1/policy/decide", body, format="json").json()
        return got["effect"], got["reason"], sorted(got["rule_ids"])

    def stored(now):
        """The same decision outside a request: nothing cached, the rules query reads the
        defaults."""
        from conversations.selectors import load_context
        from policy.services import decision_make

        context = load_context(
            {
                "user": "wren",
                "character": "rowan",
                "conversation": str(conversation.pk),
                "now": at(now.replace("Z", "").rsplit(":", 1)[0]),
            }
        )
        d = decision_make(context=context, capability="media.voice", requested_by="user").decision
        return d.effect, d.reason, sorted(d.rule_ids)

    times = [
        "2026-12-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
        "2026-04-01T00:00:00Z",
        "2025-06-01T00:00:00Z",
    ]
    for _ in range(2):  # cold, then warm
        for now in times:
            assert decide(now) == stored(now), now
    assert decide(times[0])[:2] == (
        "allow",
        "explicit-rule",
    )  # revoked and lapsed defaults left out
    assert decide(times[1])[:2] == ("ask", "conflicting-rules")
