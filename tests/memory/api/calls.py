"""The memory API's calls, shared by its tests."""

USER_SCOPE = {"kind": "user"}


def assert_memory(api, **body):
    body.setdefault("scope", USER_SCOPE)
    return api.post("/api/v1/memories", body, format="json")
