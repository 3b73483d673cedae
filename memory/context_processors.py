"""The memory switches (SPEC I8) for every page's template: with `use` off every page says
that memories are not used in conversations now (`includes/switch_notice.html`). Read through
`memory.switches.memory_settings_of` from the profile the time-zone middleware loaded with the
user, so it costs a page no query."""

from __future__ import annotations

from .switches import memory_settings_of


def memory_switches(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or request.path.startswith("/api/"):
        return {}
    return {"memory_switches": memory_settings_of(user)}
