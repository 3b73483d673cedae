"""What a message teaches (SPEC §8) as memory writes — pure, standard library only
(docs/DESIGN.md, habit 1). The extractor's findings, in order, go into one `WriteBatch`:

- a plain fact is asserted in the user scope with authority `rule-extracted` and the message
  as its source;
- an explicit correction ("renamed", "not X", "actually") is a correct (§2) of the record of
  that key projected for the context now, in that record's scope — seeing every write before
  it in the same message — or, with none projected, an assert in the user scope as
  `user-corrected`. For a `one` key the correction supersedes the target and keeps the
  message as its source; for a `many` key it is the correct of §2: the target's value slot is
  retracted (W10) and the new value asserted, as the user's own write (no sources); the same
  value again is a confirm.

Both the turn pipeline and `POST /memory/remember` decide through `learn`, so the rules of §8
have one implementation.

A connection's text (SPEC §15 M3, `agent`: the connection) teaches the same facts with authority
`model-inferred` only, whatever the text says: a correction that would replace, retract or
supersede a value held with a higher authority is an `AuthorityConflict`, the same value again
is `unchanged` (never a confirm), and any live tombstone of the key blocks it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from config.errors import AuthorityConflict
from conversations.domain import Context
from conversations.scopes import Scope

from .current import ResolveBasis
from .domain import AUTHORITY_RANK, Tombstone, normalise_value
from .write_rules import Fact, Outcome, Retract, WriteBatch, check_fields

EXTRACTED = "rule-extracted"
CORRECTED = "user-corrected"
CONFIRMED = "user-confirmed"
INFERRED = "model-inferred"


@dataclass(frozen=True)
class CorrectionBasis:
    """What a correction's target is decided with, besides the batch's records: what the
    context is resolved and projected with (`basis`: the registry, the user's secret, P2's
    thresholds) and the user's tombstones."""

    basis: ResolveBasis
    tombstones: Sequence[Tombstone]

    @property
    def many_keys(self) -> frozenset[str]:
        return self.basis.many_keys


def authority_of(item, agent: tuple[str, ...] = ()) -> str:
    """The authority a finding is written with when nothing it names is held (§8, M3): a
    connection's is `model-inferred`, a correction `user-corrected`, a fact
    `rule-extracted`."""
    if agent:
        return INFERRED
    return CORRECTED if item.correction else EXTRACTED


def check(found: Iterable) -> None:
    """W1 for what the extractor found, before anything is decided: `ValidationError` for the
    first finding a write would refuse (a value over the length limit, say)."""
    for item in found:
        check_fields(
            key=item.key,
            value=item.value,
            authority=CORRECTED if item.correction else EXTRACTED,
            confidence=1.0,
        )


def learn(
    found: Sequence,
    batch: WriteBatch,
    *,
    context: Context,
    known: CorrectionBasis,
    sources: tuple[str, ...],
    source_time: datetime | None,
    agent: tuple[str, ...] = (),
) -> list[Outcome]:
    """The writes of `found` (the extractor's findings, in order) added to `batch`, and the
    answer of each. `sources` are the message ids the facts come from (none for a text
    without a source message), `source_time` their newest time; `agent` the connection whose
    text it is, (id, name), or empty."""
    outcomes = []
    for item in found:
        if agent:
            outcomes.append(_agent_write(item, batch, context=context, known=known, agent=agent))
        elif item.correction:
            outcomes.append(
                _correct(
                    item,
                    batch,
                    context=context,
                    known=known,
                    sources=sources,
                    source_time=source_time,
                )
            )
        else:
            outcomes.append(
                batch.add(
                    Fact(
                        key=item.key,
                        value=item.value,
                        scope=Scope("user"),
                        authority=EXTRACTED,
                        many=item.key in known.many_keys,
                        sources=tuple(sorted(set(sources))),
                        source_time=source_time,
                    )
                )
            )
    return outcomes


def _agent_write(
    item, batch: WriteBatch, *, context: Context, known: CorrectionBasis, agent: tuple[str, ...]
) -> Outcome:
    """A connection's finding: `model-inferred`, superseding the projected record of its key
    only where that record's authority is not higher (W6); a correction of a higher value is
    refused, and the same value is `unchanged`."""
    key, value = item.key, item.value
    many = key in known.many_keys
    target = target_of(key, batch, context=context, known=known) if item.correction else None
    if target is not None:
        if target.authority_rank > AUTHORITY_RANK[INFERRED]:
            raise AuthorityConflict(
                "A value the user gave or confirmed cannot be replaced by an assistant."
            )
        if normalise_value(value) == normalise_value(target.value):
            return Outcome("unchanged", target)
        if many:
            batch.add(Retract(target.scope_id, key, many=True, value=target.value))
    scope = target.scope if target is not None else Scope("user")
    return batch.add(
        Fact(
            key=key,
            value=value,
            scope=scope,
            authority=INFERRED,
            many=many,
            supersedes=target.id if target is not None and not many else None,
            agent=agent,
        )
    )


def target_of(key: str, batch: WriteBatch, *, context: Context, known: CorrectionBasis):
    """The record of `key` projected for `context` at its `now` (R1–R6, then P1–P4), as the
    batch's writes so far left the records, or None."""
    resolution = known.basis.resolve(batch.records(key), known.tombstones, context)
    projection = known.basis.project(resolution.active)
    return next((p.record for p in projection.prompt if p.key == key), None)


def _correct(
    item,
    batch: WriteBatch,
    *,
    context: Context,
    known: CorrectionBasis,
    sources: tuple[str, ...],
    source_time,
) -> Outcome:
    key, value = item.key, item.value
    many = key in known.many_keys
    target = target_of(key, batch, context=context, known=known)

    def fact(value: str, scope: Scope, authority: str = CORRECTED, **more) -> Outcome:
        return batch.add(
            Fact(key=key, value=value, scope=scope, authority=authority, many=many, **more)
        )

    told = {"sources": tuple(sorted(set(sources))), "source_time": source_time}
    if target is None:
        return fact(value, Scope("user"), **told)
    if not many:
        return fact(value, target.scope, **told, supersedes=target.id)
    # §2 Correct of a `many` key, valid from the write's clock, the user's own write.
    now = batch.now
    if normalise_value(value) == normalise_value(target.value):
        if target.authority_rank >= AUTHORITY_RANK[CONFIRMED]:
            return Outcome("unchanged", target)
        return fact(target.value, target.scope, CONFIRMED, valid_from=now, supersedes=target.id)
    batch.add(Retract(target.scope_id, key, many=True, value=target.value))
    return fact(value, target.scope, valid_from=now)
