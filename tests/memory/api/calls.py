"""The memory API's calls, shared by its tests."""

USER_SCOPE = {"kind": "user"}
PAST = "2026-01-01T00:00:00Z"
SETTINGS = "/api/v1/users/{}/memory-settings"


def assert_memory(api, **body):
    body.setdefault("scope", USER_SCOPE)
    body.setdefault("user", "sam")
    return api.post("/api/v1/memories", body, format="json")


def learn(api, **body):
    """Sam's basil plant named "Harbor" as the rule extractor heard it since PAST; `body`
    changes any of it."""
    values = {
        "key": "basil_plant.name",
        "value": "Harbor",
        "authority": "rule-extracted",
        "valid_from": PAST,
    }
    values.update(body)
    return assert_memory(api, **values)


def lagging(api) -> dict:
    """basil_plant.name v1 "Harbor" corrected to "Marlowe" (v1 stays stored `active` but is
    superseded), and pet.name stored `active` although its window ended (expired)."""
    v1 = learn(api).json()["memory"]
    v2 = api.post(
        f"/api/v1/memories/{v1['id']}/correct", {"value": "Marlowe"}, format="json"
    ).json()["memory"]
    ended = learn(api, key="pet.name", value="Rex", valid_until="2026-02-01T00:00:00Z").json()[
        "memory"
    ]
    return {"v1": v1["id"], "v2": v2["id"], "ended": ended["id"]}


def settings_of(api, ref="sam"):
    return api.get(SETTINGS.format(ref))


def put_settings(api, body, ref="sam"):
    return api.put(SETTINGS.format(ref), body, format="json")


def priya(api, scope=None) -> dict:
    """SPEC F7.2's example, each memory in the user's own words (so every one would enter a
    prompt): the sister's name "Priya", where Priya works (`people.priya.works_at`), a routine
    that names her and a taste that does not; `scope` for all of them (the user's own scope
    by default). Answers the ids by name."""
    scope = scope or USER_SCOPE
    found = {}
    for name, key, value in (
        ("sister", "family.sister.name", "Priya"),
        ("works", "people.priya.works_at", "Globex"),
        ("visits", "user.routine", "visiting Priya on Sundays"),
        ("tea", "user.likes", "green tea"),
    ):
        r = assert_memory(
            api, key=key, value=value, authority="user-confirmed", valid_from=PAST, scope=scope
        )
        assert r.status_code == 201, r.content
        found[name] = r.json()["memory"]["id"]
    return found


def forget(api, memory_id, **body) -> dict:
    r = api.post(f"/api/v1/memories/{memory_id}/forget", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()
