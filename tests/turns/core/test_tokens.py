"""The deterministic token estimator (SPEC I3). Pure: no database."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turns.tokens import (
    MESSAGE_OVERHEAD,
    estimate_from_bytes,
    estimate_memory,
    estimate_message,
    estimate_text,
    memory_item_text,
)

CODE_BLOCK = '```python\ndef f(x):\n\treturn {"a": x}  # ok\n```\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("Hello, world!", 4),  # 13 bytes
        ("é", 1),  # 2 bytes
        ("😀", 1),  # 4 bytes
        ("😀😀😀", 3),  # 12 bytes
        ("😀a", 2),  # 5 bytes
        ("👩\u200d👩\u200d👧", 5),  # ZWJ family: 4+3+4+3+4 = 18 bytes
        ("日本語", 3),  # 9 bytes
        ("漢字かな交じり文", 6),  # 8 × 3 = 24 bytes
        (CODE_BLOCK, math.ceil(len(CODE_BLOCK.encode("utf-8")) / 4)),
    ],
)
def test_it_estimates_text_by_utf8_bytes(text, expected):
    """I3: ceil(len(utf-8 bytes) / 4) for ASCII, accents, emoji, CJK and code blocks."""
    assert estimate_text(text) == expected


@pytest.mark.parametrize("text", ["plain ascii", "😀" * 7, "日本語のテキスト", CODE_BLOCK, "a😀日"])
def test_it_never_under_counts_bytes(text):
    """I3: emoji and CJK are never under-counted — four bytes per token, rounded up."""
    n_bytes = len(text.encode("utf-8"))
    assert estimate_text(text) * 4 >= n_bytes
    assert estimate_text(text) * 4 < n_bytes + 4


@pytest.mark.parametrize(
    ("content", "expected"),
    [("", 4), ("abcd", 5), ("😀", 5), ("日本語", 7), ("x" * 401, 101 + 4)],
)
def test_it_adds_message_overhead(content, expected):
    """I3: plus 4 per message."""
    assert MESSAGE_OVERHEAD == 4
    assert estimate_message(content) == expected


@pytest.mark.parametrize(
    ("n_bytes", "expected"), [(0, 4), (1, 5), (4, 5), (5, 6), (400, 104), (401, 105)]
)
def test_it_estimates_from_octet_lengths(n_bytes, expected):
    """I3: a database can size a message by its octet length, overhead included."""
    assert estimate_from_bytes(n_bytes) == expected


@pytest.mark.parametrize("bad", [-1, 1.5, "4", None, True])
def test_it_rejects_bad_octet_lengths(bad):
    """I3: an octet length is a non-negative int."""
    with pytest.raises(ValueError):
        estimate_from_bytes(bad)


@pytest.mark.parametrize(
    ("label", "value", "text", "expected"),
    [
        ("Pet", "Harbor", "Pet: Harbor", 3 + 4),  # 11 bytes
        ("Marcus: lives in", "Lisbon", "Marcus: lives in: Lisbon", 6 + 4),  # 24 bytes
        ("名前", "マーロウ", "名前: マーロウ", 5 + 4),  # 6 + 2 + 12 = 20 bytes
        ("", "", ": ", 1 + 4),
    ],
)
def test_it_estimates_memory_items(label, value, text, expected):
    """I3: a memory item's text is label + ": " + value, plus 4."""
    assert memory_item_text(label, value) == text
    assert estimate_memory(label, value) == expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text())
def test_it_agrees_between_text_and_bytes(text):
    """I3: the octet-length estimate equals the message estimate and never under-counts."""
    n_bytes = len(text.encode("utf-8"))
    assert estimate_from_bytes(n_bytes) == estimate_message(text)
    assert (estimate_message(text) - MESSAGE_OVERHEAD) * 4 >= n_bytes
