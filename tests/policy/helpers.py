"""The calls the policy's service tests share: a rule allowing voice, the policy version,
a decision asked for voice and a media job admitted."""

from policy import media_jobs, selectors, services


def allow_voice(user, **changes):
    values = {
        "user": user,
        "capability": "media.voice",
        "effect": "allow",
        "source": "explicit-user",
        "scope": {"kind": "global"},
    }
    values.update(changes)
    return services.rule_create(**values)


def version_of(user):
    return selectors.policy_version_of(user).as_dict()


def ask_voice(conversation, context_of, **kw):
    return services.decision_make(
        context=context_of(conversation, **kw), capability="media.voice", requested_by="user"
    )


def admit(conversation, context_of, key="job-1", capability="media.voice", **kw):
    return media_jobs.media_job_admit(
        context=context_of(conversation, **kw),
        capability=capability,
        requested_by="user",
        idempotency_key=key,
    )
