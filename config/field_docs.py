"""Plain words for every field of the API's shapes (SPEC §10 C6): what each field means where
it is used. A field's own `help_text` comes first; the schema's postprocessing
(`config.schema.postprocess`) gives every property still without a description the one here —
by shape (`"MemoryOutput.value"`) when a name means something particular there, else by name.
A test walks the served schema and fails on any property left without one.

Shapes are named as in the schema, without the `Request` suffix of request components; the
snapshot's rows (`…Row`, `Snapshot…`) describe the export's and the import's format (§9)."""

from __future__ import annotations

# What an `id` is the id of, by shape.
_ID_OF = {
    "AnswerRow": "the answer",
    "ConversationRow": "the conversation",
    "DecisionRow": "the decision",
    "HistoryRowOutput": "the memory",
    "MemoryOutput": "the memory",
    "MemoryRow": "the memory",
    "MediaJobOutput": "the media job",
    "MediaJobRow": "the media job",
    "MessageRow": "the message",
    "RuleOutput": "the rule",
    "RuleRow": "the rule",
    "TellerRow": "the connection that told the memory (kept as text: an export needs no "
    "connection row)",
    "TombstoneRow": "the tombstone",
    "TurnRow": "the turn",
    "ExclusionOutput": "the memory left out",
    "ExplainOutput": "the memory explained",
}

_PAGE = {
    "count": "How many items the whole list holds (after its filters), across all pages.",
    "next": "The URL of the next page; null on the last page.",
    "previous": "The URL of the previous page; null on the first page.",
    "results": "The items of this page.",
}

_SCOPE_KIND = (
    "Which kind of scope: `user` (everywhere for this user), `character` (with one "
    "character), `conversation` (in one conversation) or `scene` (in one scene of a "
    "conversation)."
)
_RULE_SCOPE_KIND = (
    "Which kind of scope: `global` (everywhere), `character`, `conversation` or `scene`."
)

# By field name: the meaning wherever the name appears, unless a shape says otherwise below.
BY_NAME: dict[str, str] = {
    **_PAGE,
    "user": "The ref of the user (the runtime's own id for the person).",
    "key": "What the memory is about, as a dotted key such as `pet.name` or `user.lives_in`.",
    "value": "The remembered value; empty once forgotten (a forget erases it).",
    "scope": "Where it applies: for the user everywhere, with one character, in one "
    "conversation or in one scene of a conversation.",
    "kind": _SCOPE_KIND,
    "character": "The slug of the character.",
    "conversation": "The id of the conversation.",
    "scene": "The scene's id within its conversation, as the runtime names it.",
    "context": "Where and when: the user and, as needed, the character, the conversation and "
    "the scene (a scene needs its conversation), and optionally the time (`now`). "
    "This object is required; its fields go inside it.",
    "capability": "The capability's name, such as `tone.playful`, `media.voice` or `media.image`.",
    "requested_by": "Who asks for the capability: the `user`, the companion (`assistant`) or "
    "an `automation`.",
    "effect": "`allow`, `deny` or `ask` (ask the user first).",
    "reason": "Why, as a stable code.",
    "status": "The stored status.",
    "created_at": "When it was created.",
    "title": "The conversation's title; empty when none was given.",
    "last_seq": "The `seq` of the conversation's newest message (0 before the first).",
    "name": "The display name.",
    "slug": "The character's slug: its id in paths and bodies.",
    "seq": "The message's number in its conversation: 1, 2, 3… in order.",
    "role": "Who wrote the message: the `user`, the companion (`assistant`) or the `system`.",
    "content": "The message's text.",
    "outcome": "What the write did: `created` a new memory; `unchanged` (already current); "
    "`replayed` (a repeated idempotency key: the first result); `blocked` (not "
    "written; `reason` says why).",
    "memory": "The memory written or found, with its state now; null when nothing was written.",
    "authority": "Who vouches for it, weakest first: `model-inferred`, `rule-extracted`, "
    "`user-confirmed`, `user-corrected`. A stronger authority wins a conflict.",
    "confidence": "How sure the source is, from 0 to 1 (1 by default).",
    "valid_from": "When it starts to hold.",
    "valid_until": "When it stops holding; null for open-ended.",
    "retracted_at": "When it was marked no longer true; null if never.",
    "recorded_at": "When this version was stored (the database clock).",
    "evidence_time": "The time of the evidence: the newest of its source messages' times, or, "
    "without sources, when it was asserted to start.",
    "sources": "The ids of the messages it was learned from (may be empty).",
    "supersedes": "The id of the version this one replaces; null for a first version.",
    "version": "Its version number: 1 for the first, counting up with each change.",
    "status_since": "When the stored status last changed; null while `active`.",
    "state_detail": "What decided `state`: the resolution step, the memory that superseded or "
    "outranked it, and since when (E1).",
    "idempotency_key": "A key of the runtime's choosing: the same key with the same request "
    "answers the first result instead of doing it again; with another "
    "request it is a 409 `idempotency_key_reused`.",
    "decision_id": "The id of the boundary decision.",
    "rule_ids": "The ids of the rules the decision used.",
    "policy_version": "The policy versions the decision was made under: the product defaults' "
    "and the user's (each counts up when their rules change).",
    "defaults": "The version of the product's default rules.",
    "answer": "The user's answer: `allow` or `deny`.",
    "remember": "How long the answer holds: `once` (this decision only) or remembered as a "
    "rule for the `scene`, the `conversation`, the `character` or everywhere "
    "(`global`).",
    "media_job": "The id of the media job the answer is about, when it is one.",
    "question": "The capability's question to ask the user.",
    "label": "The key's label in words, as the user's pages show it.",
    "certainty": "How certain the memory is, in words for the model: `confirmed` (the user "
    "confirmed or corrected it), `likely` or `uncertain`.",
    "turn_key": "The runtime's own key for the turn, unique in its conversation.",
    "explain": "Why each candidate was or was not chosen; only when asked for.",
    "learn": "Whether the companion may learn new memories from messages.",
    "use": "Whether memories may enter prompts.",
    "changed_at": "When a switch last changed; null if never.",
    "changed_by": "Where the last change came from: the user's pages (`user`), the API (`api`) "
    "or `support`.",
    "estimated_tokens": "What it costs in the token budget.",
    "source": "Where the rule comes from, weakest first: `product-default`, "
    "`confirmed-inference`, `explicit-user`.",
    "revoked_at": "When the rule was revoked; null while it is not.",
    "detail": "The reason in words.",
    "rule_id": "The id of the rule.",
    "step": "The resolution step that decided (R1–R8).",
    "text": "The text to learn from, such as a message.",
    "keys": "Only these keys (all keys when absent or empty).",
    "trace": "How the resolution went, step by step, for debugging (ids and counts, never values).",
    "resolver_version": "The version of the resolution rules used.",
    "active": "The memories that apply in the context, each with its state.",
    "excluded": "The memories that do not apply, each with why.",
    "prompt": "What a prompt would get, in the narrow shape the model sees: key, label, "
    "value, certainty and scope, with no ids, so nothing about the store reaches the "
    "model (P4). The same memories with their ids are in `active`.",
    "prompt_excluded": "The memories left out of the prompt, each with why.",
    "extracted": "One outcome per fact found in the text.",
    "records": "Every version of the fact that the retraction closed, as they are now.",
    "everywhere": "Forget the key in every scope of the user, not only this memory's scope.",
    "whole_key": "For a many-valued key (such as `user.likes`), forget every value, not only "
    "this one.",
    "value_hash": "For a forget of one value of a many-valued key: a keyed hash of that value "
    "(never the value); null when the whole key was forgotten.",
    "forgotten_at": "When the forget was made.",
    "blocks_sources_before": "Facts from messages older than this are never learned again.",
    "forgotten_by": "Who asked for the forget: the `user`, or `support` on the user's behalf.",
    "email": "The user's email address.",
    "first_name": "The user's first name.",
    "last_name": "The user's last name.",
    "date_joined": "When the user was created.",
    "ref": "The user's ref: the runtime's own id for the person.",
}

# By shape, where a name means something particular there.
BY_SHAPE: dict[str, str] = {
    "AssertOutput.reason": "Only for `blocked`: `forgotten` (the user forgot this fact) or "
    "`paused` (learning is switched off and the write was not the "
    "user's).",
    "ExtractedOutput.reason": "Only for `blocked`: `forgotten` (the user forgot this fact) or "
    "`paused` (learning is switched off).",
    "ExclusionOutput.reason": "Why the memory does not apply or is left out, as a stable code "
    "(such as `scope`, `expired`, `superseded`, `forgotten`, "
    "`low-confidence`, `budget`, `memory-off`, `withheld`).",
    "ExplainOutput.reason": "The stable code of why the memory was or was not chosen.",
    "ExplainOutput.detail": "The same in words, with the ids and times involved.",
    "DecisionOutput.reason": "Why this effect: `explicit-rule` (a rule decided), "
    "`conflicting-rules` (the strongest rules disagreed, so ask) or "
    "`no-applicable-rule` (no rule applied, so ask).",
    "MediaJobDecisionOutput.reason": "Why this effect: `explicit-rule`, `conflicting-rules` or "
    "`no-applicable-rule`.",
    "MediaJobOutput.capability": "The media capability of the job (such as `media.voice`).",
    "MediaJobOutput.decision": "The boundary decision the job was admitted with.",
    "MediaJobOutput.reason": "Why the job was rejected or cancelled, as a stable code; absent "
    "otherwise.",
    "MediaJobOutput.policy_version_at_admission": "The policy versions when the job was admitted.",
    "MediaJobOutput.policy_version_at_start": "The policy versions when the job was started; "
    "absent until then.",
    "PolicyAnswerOutput.effect": "The effect that now applies to the decision.",
    "PolicyAnswerOutput.rule": "The rule the answer created; null for `remember: once`.",
    "PolicyAnswerOutput.media_job": "The media job the answer moved on; null without one.",
    "PolicyAnswerOutput.policy_version": "The policy versions after the answer.",
    "PolicyAnswerOutput.replayed": "True when this decision was already answered: this repeats "
    "the first answer's result.",
    "PolicyAnswerOutput.decision_id": "The id of the decision answered.",
    "PolicyDecideInput.explain": "Also answer why each rule was or was not a candidate "
    "(`explain`).",
    "PolicyDecideInput.capability": "The capability to decide, such as `tone.playful`.",
    "MediaJobAdmitInput.capability": "The media capability to make, such as `media.voice` or "
    "`media.image`.",
    "MediaJobAdmitInput.idempotency_key": "A key of the runtime's choosing: the same key with "
    "the same request answers the same job (200).",
    "PolicyVersionOutput.user": "The version of the user's own rules.",
    "PolicyVersionRow.user": "The version of the user's own rules.",
    "CapabilityOutput.name": "The capability's name, such as `tone.playful`.",
    "CapabilityOutput.question": "The question to ask the user when a decision about it is `ask`.",
    "RuleExplanationOutput.reason": "Why the rule was or was not a candidate, as a stable code.",
    "RuleOutput.user": "The ref of the user whose rule it is; null for a product default.",
    "RuleOutput.scope": "Where the rule applies: everywhere (`global`), with one character, in "
    "one conversation or in one scene.",
    "RuleOutput.valid_from": "When the rule starts to apply.",
    "RuleOutput.valid_until": "When the rule stops applying; null for open-ended.",
    "RuleOutput.version": "The rule's version: 1 when created.",
    "RuleCreateInput.capability": "The capability the rule is about, such as `tone.playful`.",
    "RuleCreateInput.effect": "What the rule decides: `allow`, `deny` or `ask`.",
    "RuleCreateInput.scope": "Where the rule applies: everywhere (`global`, product defaults "
    "only), with one character, in one conversation or in one scene.",
    "RuleCreateInput.requested_by": "Only for requests by this requester (`user`, `assistant`, "
    "`automation`); null or absent for any.",
    "RuleScopeOutput.kind": _RULE_SCOPE_KIND,
    "RuleScopeInput.kind": _RULE_SCOPE_KIND,
    "PolicyScopeInput.kind": _RULE_SCOPE_KIND,
    "MemoryAssertInput.user": "The ref of the user the fact is about.",
    "MemoryAssertInput.value": "The value to remember (1–2,000 characters).",
    "MemoryAssertInput.scope": 'Where the fact holds: `{"kind": "user"}` for everywhere, or '
    "with one character, in one conversation or in one scene.",
    "MemoryAssertInput.authority": "Who vouches for it, weakest first: `model-inferred` (the "
    "default), `rule-extracted`, `user-confirmed`, "
    "`user-corrected`.",
    "MemoryAssertInput.sources": "The ids of the messages the fact comes from, if any: they "
    "date the evidence and let a forget block relearning.",
    "MemoryAssertInput.supersedes": "The id of the memory this one corrects, when the runtime "
    "knows it; it must be of the same key and scope.",
    "MemoryCorrectInput.value": "The right value (1–2,000 characters).",
    "ProjectedOutput.scope": "Where the memory holds (its scope's shape; no ids of records).",
    "ProjectedOutput.value": "The remembered value, to put in the prompt.",
    "ProjectedOutput.key": "What the memory is about, as a dotted key.",
    "PlanMemoryOutput.scope": "Where the memory holds (its scope's shape; no ids of records).",
    "PlanMemoryOutput.value": "The remembered value, to put in the prompt.",
    "PlanMemoryOutput.key": "What the memory is about, as a dotted key.",
    "RememberInput.source": "The id of the message the text is, if it is one: it becomes the "
    "source of what is learned.",
    "ResolveInput.explain": "The id of one memory to explain: the answer then says which step "
    "decided it and why.",
    "ResolveOutput.explain": "Why the memory named in `explain` was or was not chosen.",
    "RetractOutput.retracted_at": "When the fact was marked no longer true (now).",
    "HistoryRowOutput.effective_until": "When this version stopped being the one in effect "
    "(replaced, retracted or ended); null while it still is.",
    "Problem.title": "A short, stable summary of the problem's code.",
    "Problem.status": "The HTTP status code, repeated in the body.",
    "Problem.detail": "What went wrong with this request, in words.",
    "MemorySettingsOutput.learn": "Whether the companion may learn new memories from messages "
    "(on by default).",
    "MemorySettingsOutput.use": "Whether memories may enter prompts (on by default).",
    # The snapshot (§9): what the export writes and the import reads.
    "Snapshot.format": "The snapshot's format and version: `companion-memory/3`.",
    "SnapshotInput.format": "The snapshot's format and version: `companion-memory/3`, or an "
    "earlier one: a `companion-memory/2` file imports with no memory links (F7.2), a "
    "`companion-memory/1` file with no links at all (F6).",
    "Snapshot.exported_at": "When the snapshot was made.",
    "Snapshot.user": "The user: ref, name, email and memory switches.",
    "SnapshotInput.user": "The user: ref (it must be the user in the path), name, email and "
    "memory switches.",
    "Snapshot.reveals": "When support staff were shown the user's private text (the reveal "
    "log the user can see); not imported.",
    "Snapshot.policy_version": "The user's policy versions.",
    "SnapshotInput.policy_version": "The user's policy versions.",
    "SnapshotUserInput.ref": "The user's ref. On import it must be the `{user_ref}` of the "
    "path: a snapshot of another user is refused with a 400 naming "
    "`user.ref`.",
    "SnapshotUserInput.memory_settings": "The user's memory switches (`learn`, `use`).",
    "ConversationRow.character": "The slug of the conversation's character.",
    "ConversationRow.last_seq": "The `seq` of the conversation's newest message.",
    "MessageRow.conversation": "The id of the message's conversation.",
    "TurnRow.conversation": "The id of the turn's conversation.",
    "TurnRow.scene": "The turn's scene; null without one.",
    "TurnRow.status": "`open` until the reply is committed, then `replied`.",
    "TurnRow.user_message": "The id of the user's message that opened the turn.",
    "TurnRow.reply_message": "The id of the companion's reply; null while open.",
    "TurnRow.extracted": "What the turn learned: one outcome per fact, with the memory's id.",
    "TurnRow.plan_snapshot": "The ids and parameters of the turn's last plan (never text), so a "
    "past plan can be explained.",
    "TurnRow.plan_hash": "The hash of the turn's last plan.",
    "TurnRow.learning": "Whether learning was on when the turn was created.",
    "ExtractedRow.memory": "The id of the memory written; null when nothing was.",
    "MemoryRow.scope": "Where the memory holds (a memory scope).",
    "MemoryRow.status": "The stored status: `active`, `superseded`, `expired` or `forgotten`.",
    "TombstoneRow.scope": "The forget's scope id (`user:<ref>`, `character:<ref>:<slug>`, "
    "`conversation:<id>`, `scene:<id>:<scene>`) or `*` for every scope.",
    "TombstoneRow.key": "The key forgotten.",
    "RetractionRow.scope": "The scope id of the retracted fact.",
    "RetractionRow.key": "The key of the retracted fact.",
    "RetractionRow.value_hash": "For one value of a many-valued key, a keyed hash of it; empty "
    "for the whole key.",
    "RetractionRow.retracted_at": "When the fact was marked no longer true.",
    "IdempotencyRow.key": "The idempotency key the runtime sent.",
    "IdempotencyRow.payload_hmac": "A keyed hash of the request sent with the key (never its "
    "text), to refuse the key with another request.",
    "IdempotencyRow.outcome": "The outcome the first request had.",
    "IdempotencyRow.reason": "The first request's reason, when it was `blocked`.",
    "IdempotencyRow.record": "The id of the memory the first request wrote or found.",
    "KeyRow.key": "A memory key of the user's that the registry knows.",
    "KeyRow.cardinality": "`one` (a single value) or `many` (each value its own, such as "
    "`user.likes`).",
    "RuleRow.scope": "Where the rule applies (a rule scope).",
    "RuleRow.supersedes": "The id of the rule version this one replaced; null for the first.",
    "DecisionRow.reason": "Why the decision had its effect, as a stable code.",
    "DecisionRow.defaults_version": "The product defaults' policy version it was made under.",
    "DecisionRow.user_version": "The user's policy version it was made under.",
    "DecisionRow.scope_ids": "The scope ids of the context it was made in.",
    "DecisionRow.decided_at": "When the decision was made.",
    "AnswerRow.decision": "The id of the decision answered.",
    "AnswerRow.rule": "The id of the rule the answer created; null for `once`.",
    "AnswerRow.answered_at": "When the user answered.",
    "MediaJobRow.decision_id": "The id of the decision the job was admitted with.",
    "MediaJobRow.start_decision_id": "The id of the decision made when the job started; null "
    "before.",
    "MediaJobRow.started_at": "When the job started; null before.",
    "MediaJobRow.finished_at": "When the job finished; null before.",
    "MediaJobRow.status": "The job's status: `queued`, `needs-confirmation`, `rejected`, "
    "`running`, `cancelled` or `done`.",
    "MediaJobRow.reason": "Why the job was rejected or cancelled; empty otherwise.",
    "MediaJobRow.decision_effect": "The admission decision's effect.",
    "MediaJobRow.decision_reason": "The admission decision's reason.",
    "MediaJobRow.decision_rule_ids": "The rules the admission decision used.",
    "MediaJobRow.admission_defaults_version": "The product defaults' policy version at admission.",
    "MediaJobRow.admission_user_version": "The user's policy version at admission.",
    "MediaJobRow.allowed_once": "Whether the user allowed it once in answer to an ask.",
    "MediaJobRow.start_defaults_version": "The product defaults' policy version at start.",
    "MediaJobRow.start_user_version": "The user's policy version at start.",
    "RevealRow.opened_at": "When support staff opened the reveal.",
    "RevealRow.expires_at": "When the reveal ends.",
    "RevealRow.status": "Whether the reveal is open, expired or closed.",
    "MemorySettingsRow.changed_at": "When a switch last changed; null if never.",
    "MemoryRow.told_by": "Who told the memory other than in a message (§15 M3): the "
    "connected assistant that stored it, at most one, as `{kind, id, name}`; empty otherwise.",
}

_SNAPSHOT_LISTS = {
    "characters": "The characters the user's conversations, scopes and rules name.",
    "conversations": "The user's conversations.",
    "messages": "Every message of the user's conversations.",
    "turns": "Every turn of the user's conversations.",
    "memories": "Every memory record of the user, every version.",
    "tombstones": "The user's forgets.",
    "retractions": "When facts of the user were marked no longer true.",
    "idempotency": "The idempotency keys of the user's memory writes, so a retry after the "
    "import still replays.",
    "policy_rules": "The user's boundary rules, every version.",
    "decisions": "The boundary decisions logged for the user.",
    "answers": "The user's answers to ask decisions.",
    "media_jobs": "The user's media jobs.",
}
for _name, _text in _SNAPSHOT_LISTS.items():
    BY_SHAPE[f"Snapshot.{_name}"] = BY_SHAPE[f"SnapshotInput.{_name}"] = _text


def shape_of(component: str) -> str:
    """A schema component's shape name: without the `Request` suffix of request components."""
    return component[: -len("Request")] if component.endswith("Request") else component


def describe(component: str, name: str) -> str | None:
    """The description of a field of a shape, or None when this module has none."""
    shape = shape_of(component)
    found = BY_SHAPE.get(f"{shape}.{name}")
    if found:
        return found
    if name == "id" and shape in _ID_OF:
        return f"The id of {_ID_OF[shape]}."
    return BY_NAME.get(name)
