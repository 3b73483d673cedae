"""The policy endpoints of SPEC §10: one view per operation (DESIGN habit 3). Each validates
its input with its own serializer, calls one service and serializes the result; every error
is a DomainError or a DRF error that config.api renders as problem details."""

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import operation, paginated, represented, validated
from conversations.selectors import load_context, user_by_ref

from . import media_jobs, selectors, services
from .serializers import (
    CapabilityOutput,
    CapabilityPageOutput,
    DecisionOutput,
    MediaJobAdmitInput,
    MediaJobCompleteInput,
    MediaJobOutput,
    MediaJobStartInput,
    PolicyAnswerInput,
    PolicyAnswerOutput,
    PolicyDecideInput,
    RuleCreateInput,
    RuleListQueryInput,
    RuleOutput,
    RulePageOutput,
    RuleRevokeInput,
)


class CapabilityListApi(APIView):
    """SPEC §6: the capability catalog, each with the question to ask."""

    @operation("policy_capabilities_list", {200: CapabilityPageOutput})
    def get(self, request):
        """List the capabilities

        Answer the capabilities boundary rules and decisions are about — such as `tone.playful`,
        `media.voice` or `media.image` — each with the question to ask the user when a decision is
        `ask`, as a paginated list (§6)."""
        return paginated(self, request, selectors.capability_list(), CapabilityOutput)


class PolicyDecideApi(APIView):
    """D1–D7, logged (D10). An unknown capability is a 400 naming `capability`."""

    @operation("policy_decide", {200: DecisionOutput}, 400, request=PolicyDecideInput)
    def post(self, request):
        """Decide whether a capability is allowed

        Decide whether the companion may use a capability in a context: `allow`, `deny`, or `ask`
        (ask the user the capability's question, then send the answer to `POST /policy/answers`).
        The user's own rules outrank the product's defaults, then the narrowest scope wins; when the
        strongest rules disagree, or none applies, the answer is `ask`. Every decision is logged
        with the rules it used. The body's `context` object is required (a 400 names `context` when
        it is missing); an unknown capability is a 400 naming `capability` (D1–D7, D10)."""
        data = validated(PolicyDecideInput, request.data)
        context = load_context(data["context"])
        outcome = services.decision_make(
            context=context,
            capability=data["capability"],
            requested_by=data["requested_by"],
            explain=data["explain"],
        )
        return Response(represented(DecisionOutput, outcome))


class RuleListApi(APIView):
    """A user's rules (every version, revoked ones too), or the product defaults without
    `user`; paginated."""

    @operation("policy_rules_list", {200: RulePageOutput}, 400, parameters=[RuleListQueryInput])
    def get(self, request):
        """List boundary rules

        Answer a user's boundary rules — every version, revoked ones too — or, without `user`, the
        product's default rules, as a paginated list; `capability` keeps only the rules of one
        capability (§6)."""
        query = validated(RuleListQueryInput, request.query_params)
        user = user_by_ref(query["user"], field="user") if query.get("user") else None
        if query.get("capability"):
            selectors.capability_by_name(query["capability"])
        rules = selectors.rule_list(user=user, capability=query.get("capability"))
        return paginated(self, request, rules, RuleOutput)


class RuleCreateApi(APIView):
    """SPEC §6: a new rule (version 1); bumps the owner's policy version (D7). With `replace`
    (D11) it replaces the user's explicit choices at its place."""

    @operation("policy_rules_create", {201: RuleOutput}, 400, request=RuleCreateInput)
    def post(self, request):
        """Create a boundary rule

        Create a rule that allows, denies or asks about a capability in a scope, for one user or,
        without `user`, as a product default. Creating it changes the owner's policy version, so
        decisions made before are told apart. With `replace: true` it revokes the user's earlier
        choices for the same capability and scope in the same transaction (D7, D11)."""
        data = validated(RuleCreateInput, request.data)
        user = user_by_ref(data["user"], field="user") if data.get("user") else None
        rule = services.rule_create(
            user=user,
            capability=data["capability"],
            effect=data["effect"],
            source=data["source"],
            scope=data["scope"],
            requested_by=data.get("requested_by"),
            valid_from=data.get("valid_from"),
            valid_until=data.get("valid_until"),
            replace=data["replace"],
        )
        return _rule_answer(rule, status.HTTP_201_CREATED)


class RuleCollectionApi(RuleListApi, RuleCreateApi):
    """`/policy/rules`: GET lists, POST creates (one path, two operations)."""


class RuleRevokeApi(APIView):
    """D5/D7: revoke a rule now; revoking it again changes nothing."""

    @operation("policy_rules_revoke", {200: RuleOutput}, 400, 404, request=RuleRevokeInput)
    def post(self, request, rule_id):
        """Revoke a boundary rule

        Revoke the rule now: it no longer applies to decisions, and the owner's policy version
        changes. Revoking it again changes nothing and answers the same rule (D5, D7)."""
        validated(RuleRevokeInput, request.data)
        rule = services.rule_revoke(rule_id=rule_id)
        return _rule_answer(rule)


class PolicyAnswerApi(APIView):
    """D8: the user's answer to an ASK decision."""

    @operation(
        "policy_answers_create", {200: PolicyAnswerOutput}, 400, 409, request=PolicyAnswerInput
    )
    def post(self, request):
        """Answer an ask decision

        Record the user's answer to an `ask` decision: `allow` or `deny`, for this time only
        (`remember: once`) or remembered as a rule for the user, the character, the conversation or
        the scene. Only an `ask` decision can be answered (D8, D11)."""
        data = validated(PolicyAnswerInput, request.data)
        outcome = services.decision_answer(
            decision_id=data["decision_id"],
            answer=data["answer"],
            remember=data["remember"],
            media_job_id=data.get("media_job"),
        )
        return Response(represented(PolicyAnswerOutput, outcome))


class MediaJobAdmitApi(APIView):
    """D9: admit a media job (201; the same idempotency key and request again: 200)."""

    @operation(
        "media_jobs_create",
        {201: MediaJobOutput, 200: MediaJobOutput},
        400,
        409,
        request=MediaJobAdmitInput,
    )
    def post(self, request):
        """Admit a media job

        Ask to make a piece of media (a voice message, an image) in a context: the boundary decision
        is made now and the job is `queued`, `needs-confirmation` (the decision was `ask`) or
        `rejected`. Answers 201 for a new job; the same `idempotency_key` with the same request
        answers 200 with the same job (D9)."""
        data = validated(MediaJobAdmitInput, request.data)
        context = load_context(data["context"])
        job, created = media_jobs.media_job_admit(
            context=context,
            capability=data["capability"],
            requested_by=data["requested_by"],
            idempotency_key=data["idempotency_key"],
        )
        return _job_answer(job, status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MediaJobStartApi(APIView):
    """D9: decide again and start (or cancel) the job; 200 with the job whatever its status."""

    @operation("media_jobs_start", {200: MediaJobOutput}, 400, 404, request=MediaJobStartInput)
    def post(self, request, job_id):
        """Start a media job

        Decide again, now, and start the job (`running`) if the capability is still allowed, or
        cancel it if a boundary changed since it was admitted. Answers 200 with the job whatever its
        status (D9)."""
        validated(MediaJobStartInput, request.data)
        job = media_jobs.media_job_start(job_id=job_id)
        return _job_answer(job)


class MediaJobCompleteApi(APIView):
    """D9: a running job is done (idempotent); a job that never ran is a 409."""

    @operation(
        "media_jobs_complete",
        {200: MediaJobOutput},
        400,
        404,
        409,
        request=MediaJobCompleteInput,
    )
    def post(self, request, job_id):
        """Finish a media job

        Mark a running job `done`; marking it again changes nothing. A job that never ran is a 409
        (D9)."""
        validated(MediaJobCompleteInput, request.data)
        job = media_jobs.media_job_complete(job_id=job_id)
        return _job_answer(job)


def _rule_answer(rule, code: int = status.HTTP_200_OK) -> Response:
    """A rule as stored now, read again with what its output shows (capability, character)."""
    return Response(RuleOutput(selectors.rule_by_id(rule.pk)).data, status=code)


def _job_answer(job, code: int = status.HTTP_200_OK) -> Response:
    """A media job as stored now, read again with what its output shows."""
    return Response(MediaJobOutput(selectors.media_job_by_id(job.pk)).data, status=code)
