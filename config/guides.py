"""The guides the API's documentation links to, served from the README so the two never say
different things: the README's "Connect an assistant" (SPEC §15 M2, M3) at
`/docs/connect-an-assistant`, for a developer who reads `/api/docs/` and holds no account."""

from __future__ import annotations

from django.conf import settings
from markdown_it import MarkdownIt

CONNECT_AN_ASSISTANT = "Connect an assistant"


def section_lines(text: str, title: str) -> list[str]:
    """The lines of the README's `## <title>` section, without its heading, up to the next
    `## ` heading outside a fenced code block."""
    lines = text.splitlines()
    start = lines.index(f"## {title}") + 1
    fenced = False
    for end in range(start, len(lines)):
        if lines[end].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[end].startswith("## "):
            return lines[start:end]
    return lines[start:]


def readme_section(title: str) -> str:
    """The section as HTML (CommonMark; any raw HTML in it is shown as text, not markup), read
    afresh for each request: a rarely visited page, and no function cache in the project
    (F7.6)."""
    text = (settings.BASE_DIR / "README.md").read_text(encoding="utf-8")
    markdown = MarkdownIt("commonmark", {"html": False})
    return markdown.render("\n".join(section_lines(text, title)))
