"""The turn API's calls, shared by its tests: create a turn, read its prompt plan."""


def turn(api, conv, key, content, **extra):
    return api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )


def plan(api, turn_id, **params):
    params.setdefault("budget", 2000)
    return api.get(f"/api/v1/turns/{turn_id}/prompt-plan", params)
