from django.urls import path

from config.routes import below

from . import api, views

# The runtime's API (SPEC §10), under /api/v1/ (namespace `policy_api`).
api = [
    *below(
        "policy",
        {
            "capabilities": api.CapabilityListApi.as_view(),
            "decide": api.PolicyDecideApi.as_view(),
            "rules": api.RuleCollectionApi.as_view(),
            "answers": api.PolicyAnswerApi.as_view(),
        },
    ),
    path("policy/rules/<uuid:rule_id>/revoke", api.RuleRevokeApi.as_view(), name="rule-revoke"),
    path("media-jobs", api.MediaJobAdmitApi.as_view(), name="media-jobs"),
    *below(
        "media-jobs/<uuid:job_id>",
        {"start": api.MediaJobStartApi.as_view(), "complete": api.MediaJobCompleteApi.as_view()},
        name="media-job-{}",
    ),
]

# The boundaries page, under /boundaries/ (namespace `policy`).
pages = [
    path("", views.boundaries_view, name="boundaries"),
    path("set", views.boundary_set_view, name="set"),
    path("rules/<uuid:rule_id>/revoke", views.rule_revoke_view, name="revoke"),
]
