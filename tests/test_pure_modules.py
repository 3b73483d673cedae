"""DESIGN habit 1: the pure core imports only the standard library. Each module is imported
in a fresh interpreter and must not pull in Django or DRF, directly or indirectly."""

import subprocess
import sys
from pathlib import Path

import pytest

PURE = [
    "memory.domain",
    "memory.resolver",
    "memory.projection",
    "memory.extract",
    "config.builders",
    "memory.write_rules",
    "policy.domain",
    "policy.engine",
    "turns.planner",
    "turns.plan_shapes",
    "turns.relevance",
    "turns.pipeline",
    "turns.tokens",
    "turns.stopwords",
    "turns.held_history",
    "turns.left_out",
    "turns.used",
    "bench.relevance",
    "memory.learning",
    "conversations.domain",
    "conversations.scopes",
    "config.errors",
    "config.problem_codes",
    "support.words",
    "policy.presentation",
    "memory.history",
    "memory.normalisation",
    "memory.mentions",
    "memory.current",
    "memory.catch_up",
    "memory.reasons",
    "conversations.plan_snapshot",
    "conversations.places",
    "agents.arguments",
]


@pytest.mark.parametrize("module", PURE)
def test_it_keeps_the_pure_core_free_of_django(module):
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', "
        "'drf_spectacular'))\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root)},
    )
    assert result.returncode == 0, result.stderr
