"""The demo of `make run`: the continuity scenario (SPEC §11), kept on a user who can sign in,
so a new user of the pages sees a correction, a forgotten key, an uncertain memory, a scene
change and a boundary decision.

The scenario is played in a moment; a person reads it as evenings over more than a week. So
every time the demo user's rows carry is moved, turn by turn, onto a schedule: the first
evening nine days ago, the correction and the scene change four days later, the return
yesterday. Each row (and each event the user's changes left) moves with the turn it was
written in, so the order of everything (and
every window, source and forget time relative to the messages) stays exactly as played."""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, time, timedelta

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from config.clock import db_now
from conversations.models import Conversation, Turn
from conversations.services import user_delete
from events.outbox import move_times

from .continuity import play

User = get_user_model()
APPS = ("conversations", "memory", "policy")  # where a user's own data lives

# Minutes into each evening at which each of the scenario's turns is said, per evening.
EVENINGS = (
    (9, time(20, 0), (0, 3, 7, 12, 16, 21)),  # the greenhouse, the lamp, "please forget"
    (5, time(21, 0), (0, 4, 9, 13, 20, 24)),  # the new name, a playful tone, downstairs
    (1, time(19, 30), (0, 5)),  # the return: what was left unresolved, the letter
)


def schedule(now: datetime, n: int) -> list[datetime]:
    """When each of `n` turns is said: the evenings above, then two minutes apart."""
    out = []
    for days_ago, start, minutes in EVENINGS:
        evening = datetime.combine(
            (now - timedelta(days=days_ago)).date(), start, tzinfo=now.tzinfo
        )
        out += [evening + timedelta(minutes=m) for m in minutes]
    while len(out) < n:
        out.append(out[-1] + timedelta(minutes=2))
    return out[:n]


def _user_models():
    """The models that hold a user's rows (a `user` foreign key) with their time fields."""
    for model in apps.get_models():
        if model._meta.app_label not in APPS:
            continue
        try:
            field = model._meta.get_field("user")
        except FieldDoesNotExist:
            continue
        if not isinstance(field, models.ForeignKey) or field.related_model is not User:
            continue
        times = [f.name for f in model._meta.concrete_fields if isinstance(f, models.DateTimeField)]
        if times:
            yield model, times


def spread(user) -> None:
    """Move every time of `user`'s rows onto `schedule`: a row written during turn i (after
    it was created, before turn i + 1) moves by turn i's offset."""
    played = list(
        Turn.objects.filter(user=user).order_by("created_at").values_list("created_at", flat=True)
    )
    if not played:
        return
    targets = schedule(db_now(), len(played))
    offsets = [target - real for target, real in zip(targets, played, strict=True)]

    def moved(moment):
        if moment is None:
            return None
        return moment + offsets[max(bisect_right(played, moment) - 1, 0)]

    for model, names in _user_models():
        rows = list(model.objects.filter(user=user))
        for row in rows:
            for name in names:
                setattr(row, name, moved(getattr(row, name)))
            if (
                model is Turn
                and isinstance(row.plan_snapshot, dict)
                and row.plan_snapshot.get("now")
            ):
                at = moved(datetime.fromisoformat(row.plan_snapshot["now"]))
                row.plan_snapshot = {**row.plan_snapshot, "now": at.isoformat()}
        fields = [*names, "plan_snapshot"] if model is Turn else names
        if rows:
            model.objects.bulk_update(rows, fields, batch_size=500)
    move_times(user.username, moved)  # V5: the events carry the records' own times
    first = (
        Conversation.objects.filter(user=user)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    if first:
        User.objects.filter(pk=user.pk).update(date_joined=first[0] - timedelta(minutes=5))


def load(*, username: str, password: str, reset: bool = False) -> list[str]:
    """The demo for `make run`: built when its user is not there; otherwise the user is kept
    with everything they did since (confirmations, forgets, boundaries, switches) and only
    their password is set, so a restart neither deletes the user (no `user.deleted` event, no
    support reveal closed) nor undoes their work. `reset` deletes the user and builds the
    demo again. Returns what it did, in lines for the person who started it."""
    existing = User.objects.filter(username=username).first()
    if existing is None or reset:
        return build(username=username, password=password)
    existing.set_password(password)
    existing.save(update_fields=["password"])
    return [
        f"kept {username!r} as they left it, with a new password "
        "(make run DEMO=reset starts the demo over)"
    ]


def build(*, username: str, password: str) -> list[str]:
    """The demo anew: a user of that name is deleted first, with all of their data."""
    existing = User.objects.filter(username=username).first()
    if existing is not None:
        user_delete(user=existing)
    card, user = play(username=username, keep=True, days_later=timedelta(0))
    spread(user)
    user.set_password(password)
    user.save(update_fields=["password"])
    passed = sum(c.passed for c in card.checks)
    return [f"continuity scenario for {username!r}: {passed}/{len(card.checks)} checks passed"]
