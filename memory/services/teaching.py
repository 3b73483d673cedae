"""Writing what a text teaches (SPEC §8, I8): the extractor's findings (`memory.learning`,
pure) become one batch of asserts and corrections in the context's scope, with their source
message; with the user's `learn` switch off nothing is written."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction

from config.clock import db_now
from config.errors import (
    ValidationError,
)
from config.storage import RowWriter
from conversations.models import Message
from conversations.scopes import scope_columns

from .. import learning
from ..current import ResolveBasis
from ..domain import (
    REASON_PAUSED,
)
from ..extract import extract
from ..plan_rows import add_plan_rows
from ..selectors.records import last_named_key, registry
from ..state import slots_state
from ..switches import memory_settings_of
from ..write_rules import (
    Known,
    WriteBatch,
)
from .asserting import AssertResult, lock_profile, log_learned

log = logging.getLogger("companion.memory")


# ---------------------------------------------------------------------------------------------
# Extraction (SPEC §8)


def memory_remember(
    *,
    ctx,
    text: str,
    source=None,
    source_message: Message | None = None,
    agent: tuple[str, ...] = (),
) -> list[AssertResult]:
    """SPEC §8 for a text (`POST /memory/remember`): run the rule-based extractor and learn
    what it finds (`memory_learn`), with the message as source when one is named. `agent`: a
    connection's text (SPEC §15 M3), learnt as `model-inferred` only."""
    user = ctx.user
    if source_message is None and source is not None:
        source_message = Message.objects.filter(user=user, pk=source).first()
        if source_message is None:
            raise ValidationError("Unknown message for this user.", field="source")
    # I8: with `learn` off nothing is extracted at all (corrections included).
    if not memory_settings_of(user).learn:
        return []
    found = extract(text, last_named_key=last_named_key(user))
    return memory_learn(ctx=ctx, found=found, source_message=source_message, agent=agent)


def memory_learn(
    *, ctx, found, source_message: Message | None = None, agent: tuple[str, ...] = ()
) -> list[AssertResult]:
    """SPEC §8 for the extractor's findings, in order (`memory.learning`): plain facts in the
    user scope as `rule-extracted`, corrections of what is projected for the context, each
    seeing the writes before it — decided as one batch under the user's lock, with one read
    of the slots the findings touch in every scope of the context, and written at once."""
    learning.check(found)
    if not found:
        return []
    user = ctx.user
    sources = (str(source_message.pk),) if source_message is not None else ()
    source_time = source_message.created_at if source_message is not None else None
    scope_ids = ctx.domain.scope_ids()
    keys = sorted({item.key for item in found})
    with transaction.atomic():
        profile = lock_profile(user)
        if not profile.learn:
            results = [AssertResult("blocked", None, REASON_PAUSED) for _ in found]
        else:
            now = db_now()
            secret = profile.secret_bytes()
            state = slots_state(
                user,
                [(scope_id, key) for scope_id in scope_ids for key in keys],
                profile=profile,
                scope_ids=scope_ids,
            )
            batch = WriteBatch(
                Known(state.records, state.tombstones, state.retractions),
                user=user.username,
                now=now,
                secret=secret,
                new_id=lambda: str(uuid.uuid4()),
                complete_scopes=scope_ids,
            )
            cfg = settings.COMPANION
            basis = ResolveBasis(
                many_keys=state.many_keys,
                labels=registry(keys).labels,
                secret=secret,
                likely=cfg["CERTAINTY_LIKELY"],
                uncertain=cfg["CERTAINTY_UNCERTAIN"],
            )
            known = learning.CorrectionBasis(basis, state.tombstones)
            outcomes = learning.learn(
                found,
                batch,
                context=ctx.domain,
                known=known,
                sources=sources,
                source_time=source_time,
                agent=agent,
            )
            writer = RowWriter()
            add_plan_rows(writer, user, batch.plan, context_scope_fields(ctx))
            writer.flush()
            states = batch.states(
                [o.record.id for o in outcomes if o.record], many_keys=state.many_keys
            )
            results = [
                AssertResult(
                    o.outcome,
                    o.record,
                    o.reason,
                    state=states.get(o.record.id) if o.record else None,
                )
                for o in outcomes
            ]
    for item, result in zip(found, results, strict=True):
        log_learned(item, result, agent=agent, sources=len(sources))
    return results


def context_scope_fields(ctx) -> dict:
    """The scope columns of new records, by scope id, for the scopes a loaded context sees
    (`conversations.scopes.scope_columns`)."""
    character = (ctx.character.slug, ctx.character.pk) if ctx.character is not None else None
    conversation = ctx.conversation.pk if ctx.conversation is not None else None
    return scope_columns(ctx.user.username, character, conversation, ctx.scene)
