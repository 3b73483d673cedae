"""Clients generated from the served schema work (SPEC §10 C1, C3): openapi-python-client
builds a Python client that passes `mypy --strict` and drives the runtime's whole loop
against a live server; openapi-typescript builds types that the same loop's TypeScript
(`clients/typescript/loop.ts`) uses under `tsc --noEmit --strict`. Nothing generated is
committed: it is built here, in a temporary directory."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PYTHON_CLIENT = ROOT / "clients" / "python"
TYPESCRIPT = ROOT / "clients" / "typescript"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def run(*command, cwd=None) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result


@pytest.fixture
def token(db):
    from config.models import ApiToken

    _, raw = ApiToken.issue("generated-client")
    return raw


@pytest.fixture(scope="module")
def generated_client(live_server, tmp_path_factory, django_db_blocker):
    """The Python client, generated once for this file from the live server's schema, beside
    a copy of loop.py (the generator takes some ten seconds; the schema is the same for every
    test). The server's request opens its database connection, which pytest-django allows a
    fixture of this scope only inside `unblock()`."""
    where = tmp_path_factory.mktemp("python-client")
    with django_db_blocker.unblock():
        run(
            BIN / "openapi-python-client",
            "generate",
            "--url",
            f"{live_server.url}/api/schema/?format=json",
            "--meta",
            "none",
            "--output-path",
            where / "companion_client",
            "--config",
            PYTHON_CLIENT / "config.yml",
        )
    shutil.copy(PYTHON_CLIENT / "loop.py", where / "loop.py")
    return where


@pytest.fixture
def python_client(generated_client, monkeypatch):
    """The generated client importable by this test, as a program using it imports it."""
    monkeypatch.syspath_prepend(str(generated_client))
    for name in [m for m in sys.modules if m == "loop" or m.startswith("companion_client")]:
        del sys.modules[name]
    return generated_client


def test_it_generates_a_python_client_that_passes_mypy_strict_and_runs_the_loop(
    python_client, live_server, token
):
    run(
        BIN / "mypy",
        "--strict",
        "--no-incremental",
        "companion_client",
        "loop.py",
        cwd=python_client,
    )
    loop = importlib.import_module("loop")
    seen = loop.run(live_server.url, token, user="sam", slug="captain-rowan")
    assert seen.statuses == {
        "user_put": 201,
        "character_put": 201,
        "conversation_create": 201,
        "turn_create": 201,
        "turn_reply": 201,
        "conversation_get": 200,
        "conversation_messages": 200,
        "memory_correct": 201,
        "memory_forget": 200,
        "policy_decide": 200,
        "policy_answers_create": 200,
        "user_export": 200,
    }
    # C4: the conversation read back, oldest first, neither message withheld.
    assert seen.last_messages == [
        ("user", "My cat's name is Miso.", False),
        ("assistant", "Miso is a lovely name.", False),
    ]
    # C5: the tombstone's scope is an object.
    assert seen.forgotten_scope == "user"
    assert seen.remembered == "Miso" and seen.corrected == "Mochi"
    assert seen.plan_hash
    assert seen.effect == "ask" and seen.answered == "allow"
    assert seen.export_format == "companion-memory/3"


def test_it_generates_a_python_client_that_reads_a_problem(python_client, live_server, token):
    loop = importlib.import_module("loop")
    client_module = importlib.import_module("companion_client")
    user_delete = importlib.import_module("companion_client.api.users_and_characters.user_delete")
    models = importlib.import_module("companion_client.models")
    with client_module.AuthenticatedClient(base_url=live_server.url, token=token) as c:
        response = user_delete.sync_detailed("nobody", client=c)
    assert response.status_code == 404
    assert isinstance(response.parsed, models.Problem)
    assert response.parsed.type_ == "/problems/not_found"
    with pytest.raises(loop.ApiProblem):
        loop.ok(response, 204)


@pytest.mark.skipif(
    shutil.which("node") is None,
    reason="node is not installed: the "
    "TypeScript check needs node 20 and `npm ci` in clients/typescript",
)
def test_it_generates_typescript_types_that_check_the_loop_under_tsc_strict(live_server, tmp_path):
    bin_dir = TYPESCRIPT / "node_modules" / ".bin"
    if not (bin_dir / "tsc").exists():
        run("npm", "ci", "--no-audit", "--no-fund", cwd=TYPESCRIPT)
    (tmp_path / "generated").mkdir()
    run(
        bin_dir / "openapi-typescript",
        f"{live_server.url}/api/schema/?format=json",
        "--default-non-nullable",
        "false",
        "-o",
        tmp_path / "generated" / "schema.d.ts",
    )
    shutil.copy(TYPESCRIPT / "loop.ts", tmp_path / "loop.ts")
    shutil.copy(TYPESCRIPT / "tsconfig.json", tmp_path / "tsconfig.json")
    run(bin_dir / "tsc", "--noEmit", "--strict", "-p", tmp_path, cwd=tmp_path)
