from django.urls import path

from . import api, views

# The runtime's API (SPEC §10), under /api/v1/ (namespace `policy_api`).
api = [
    path("policy/capabilities", api.CapabilityListApi.as_view(), name="capabilities"),
    path("policy/decide", api.PolicyDecideApi.as_view(), name="decide"),
    path("policy/rules", api.RuleCollectionApi.as_view(), name="rules"),
    path("policy/rules/<uuid:rule_id>/revoke", api.RuleRevokeApi.as_view(), name="rule-revoke"),
    path("policy/answers", api.PolicyAnswerApi.as_view(), name="answers"),
    path("media-jobs", api.MediaJobAdmitApi.as_view(), name="media-jobs"),
    path("media-jobs/<uuid:job_id>/start", api.MediaJobStartApi.as_view(), name="media-job-start"),
    path(
        "media-jobs/<uuid:job_id>/complete",
        api.MediaJobCompleteApi.as_view(),
        name="media-job-complete",
    ),
]

# The boundaries page, under /boundaries/ (namespace `policy`).
pages = [
    path("", views.boundaries_view, name="boundaries"),
    path("set", views.boundary_set_view, name="set"),
    path("rules/<uuid:rule_id>/revoke", views.rule_revoke_view, name="revoke"),
]
