"""The calls of the read operations' tests (SPEC §10 C4): a turn and a reply that must
succeed, and the keys of a §10 list."""

LIST_KEYS = {"count", "next", "previous", "results"}


def turn(api, conv, key, content, **extra):
    response = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def reply(api, turn_id, content):
    response = api.post(f"/api/v1/turns/{turn_id}/reply", {"content": content}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["message"]
