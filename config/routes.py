"""The one rule the apps' URL lists share: the operations on one thing (a memory, a turn, the
policy) are paths below its path, `<its path>/<operation>`, each named after the operation."""

from __future__ import annotations

from django.urls import URLPattern, path


def below(prefix: str, views: dict, *, name: str = "{}") -> list[URLPattern]:
    """A route per entry of `views`, in its order: `<prefix>/<segment>` to the segment's view,
    named `name` with the segment put in (`name="memory-{}"` names `…/confirm` `memory-confirm`)."""
    return [
        path(f"{prefix}/{segment}", view, name=name.format(segment))
        for segment, view in views.items()
    ]
