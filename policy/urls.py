from django.urls import path

from . import api

app_name = "policy_api"
urlpatterns = [
    path("policy/capabilities", api.CapabilityListApi.as_view(), name="capabilities"),
    path("policy/decide", api.PolicyDecideApi.as_view(), name="decide"),
    path("policy/rules", api.RuleCollectionApi.as_view(), name="rules"),
    path("policy/rules/<uuid:rule_id>/revoke", api.RuleRevokeApi.as_view(), name="rule-revoke"),
    path("policy/answers", api.PolicyAnswerApi.as_view(), name="answers"),
    path("media-jobs", api.MediaJobAdmitApi.as_view(), name="media-jobs"),
    path("media-jobs/<uuid:job_id>/start", api.MediaJobStartApi.as_view(), name="media-job-start"),
    path("media-jobs/<uuid:job_id>/complete", api.MediaJobCompleteApi.as_view(), name="media-job-complete"),
]
