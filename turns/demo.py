"""The demo of `make run`: the continuity scenario (SPEC §11), kept on a user who can sign in,
so a new user of the pages sees a correction, a forgotten key, an uncertain memory, a scene
change and a boundary decision."""

from django.contrib.auth import get_user_model

from .continuity import play
from .services import user_delete

User = get_user_model()


def build(*, username: str, password: str) -> list[str]:
    existing = User.objects.filter(username=username).first()
    if existing is not None:
        user_delete(user=existing)
    card, user = play(username=username, keep=True)
    user.set_password(password)
    user.save(update_fields=["password"])
    return [f"continuity scenario for {username!r}: {sum(c.passed for c in card.checks)}/{len(card.checks)} checks passed"]
