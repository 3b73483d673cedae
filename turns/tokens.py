"""The deterministic token estimator of SPEC I3. Standard library only.

The estimate never calls a tokenizer, so the same text gives the same number on every
machine and in every release:

- ``estimate_text(text) = ceil(len(text.encode("utf-8")) / 4)`` — four UTF-8 bytes per
  token. Counting bytes rather than characters means emoji (4 bytes) and CJK (3 bytes) are
  never under-counted: a text of ``n`` bytes is never estimated below ``n / 4`` tokens.
- ``MESSAGE_OVERHEAD = 4`` tokens are added per message and per memory item.
- ``estimate_message(content) = estimate_text(content) + 4``.
- A memory item's text is ``memory_item_text(label, value) = label + ": " + value`` and
  ``estimate_memory(label, value) = estimate_text(memory_item_text(label, value)) + 4``.
- ``estimate_from_bytes(n_bytes) = ceil(n_bytes / 4) + 4`` is ``estimate_message`` for a
  message of which only the UTF-8 octet length is known, so a database can size history
  candidates (``octet_length(content)`` on PostgreSQL with UTF-8 encoding,
  ``length(CAST(content AS BLOB))`` on SQLite) without loading their text. For every
  string ``s``: ``estimate_from_bytes(len(s.encode("utf-8"))) == estimate_message(s)``.

The ceiling is computed with integer arithmetic (``(n + 3) // 4``), so no float rounding
is involved.
"""

from __future__ import annotations

BYTES_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
MEMORY_SEPARATOR = ": "


def _ceil_tokens(n_bytes: int) -> int:
    return (n_bytes + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def estimate_text(text: str) -> int:
    """``ceil(len(text.encode("utf-8")) / 4)``; the empty string is 0 tokens."""
    return _ceil_tokens(len(text.encode("utf-8")))


def estimate_message(content: str) -> int:
    """A message: its text estimate plus ``MESSAGE_OVERHEAD``."""
    return estimate_text(content) + MESSAGE_OVERHEAD


def estimate_from_bytes(n_bytes: int) -> int:
    """A message of ``n_bytes`` UTF-8 octets, overhead included (same as ``estimate_message``)."""
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, int) or n_bytes < 0:
        raise ValueError(f"n_bytes must be a non-negative int, not {n_bytes!r}")
    return _ceil_tokens(n_bytes) + MESSAGE_OVERHEAD


def memory_item_text(label: str, value: str) -> str:
    """The text a memory item is estimated on: ``label + ": " + value``."""
    return label + MEMORY_SEPARATOR + value


def estimate_memory(label: str, value: str) -> int:
    """A memory item: the estimate of ``label: value`` plus ``MESSAGE_OVERHEAD``. Not
    remembered: a cache keyed by the value would keep a forgotten one (F7.6), and the
    estimate costs about a microsecond."""
    return estimate_text(memory_item_text(label, value)) + MESSAGE_OVERHEAD
