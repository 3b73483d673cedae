"""The policy API's calls and the fields of its answers, shared by its tests."""

DECISION_FIELDS = {"decision_id", "effect", "reason", "rule_ids", "policy_version"}


RULE_FIELDS = {
    "id",
    "user",
    "capability",
    "effect",
    "source",
    "scope",
    "requested_by",
    "valid_from",
    "valid_until",
    "revoked_at",
    "version",
}


JOB_FIELDS = {"id", "status", "capability", "decision", "policy_version_at_admission"}


def decide(api, ctx, capability="media.voice", requested_by="user", **extra):
    return api.post(
        "/api/v1/policy/decide",
        {"context": ctx, "capability": capability, "requested_by": requested_by, **extra},
        format="json",
    )


def create_rule(api, **body):
    values = {
        "user": "wren",
        "capability": "media.voice",
        "effect": "allow",
        "source": "explicit-user",
        "scope": {"kind": "global"},
    }
    values.update(body)
    return api.post("/api/v1/policy/rules", values, format="json")


def admit(api, ctx, key="job-1", capability="media.voice"):
    return api.post(
        "/api/v1/media-jobs",
        {"context": ctx, "capability": capability, "requested_by": "user", "idempotency_key": key},
        format="json",
    )


def answer(api, decision_id, answer="allow", remember="once", **extra):
    return api.post(
        "/api/v1/policy/answers",
        {"decision_id": decision_id, "answer": answer, "remember": remember, **extra},
        format="json",
    )
