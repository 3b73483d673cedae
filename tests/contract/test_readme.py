"""The README's curl loop works as pasted (SPEC §10 C4–C6): its helper block and its loop run
under bash, unchanged, against a live server — only the address and the token that the first
block makes against `make run`'s database are this test's. The loop creates a user, a
character, a conversation, a turn with its plan, the reply, reads the last messages back,
corrects and forgets; its output shows each step's answer."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### The runtime's loop in ten minutes (curl)"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ")]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_it_has_the_loop_in_three_blocks():
    start, helpers, loop = readme_blocks()
    assert start.strip() == "make run"
    assert "export API=http://127.0.0.1:8000/api/v1" in helpers
    assert "create_api_token" in helpers
    for step in (
        "/users/",
        "/characters/",
        "/conversations",
        "/turns",
        "/reply",
        "/messages",
        "/correct",
        "/forget",
    ):
        assert step in loop, step


def test_it_runs_the_loop_as_written(live_server, api_token):
    _, helpers, loop = readme_blocks()
    # The address and the token are this test's server's; every other line runs as written.
    kept = [
        line
        for line in helpers.splitlines()
        if not line.startswith(("export API=", "export TOKEN="))
    ]
    assert len(kept) == len(helpers.splitlines()) - 2
    script = "set -euo pipefail\n" + "\n".join(kept) + "\n" + loop
    result = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "API": f"{live_server.url}/api/v1", "TOKEN": api_token},
    )
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    user, character = json.loads(lines[0]), json.loads(lines[1])
    assert user["ref"].startswith("river-") and character["slug"] == "captain-rowan"
    reply, messages, tombstone, turn = (json.loads(line) for line in lines[-4:])
    assert reply["replayed"] is False
    assert [(m["role"], m["content"], m["withheld"]) for m in messages["results"]] == [
        ("user", "My cat is called Miso.", False),
        ("assistant", "Miso is a lovely name.", False),
    ]
    assert tombstone["scope"] == {"kind": "user"} and tombstone["key"] == "cat.name"
    [extracted] = turn["extracted"]
    assert extracted["memory"]["state"] == "forgotten" and extracted["memory"]["value"] == ""
    # F7.5: the reply said the forgotten name, so it reads back withheld, without its words.
    assert turn["reply"]["withheld"] is True and turn["reply"]["content"] is None
    assert "Miso" not in json.dumps(turn)
    # The plan printed in step 3 held the memory the turn taught.
    assert '"value": "Miso"' in result.stdout and '"budget": 800' in result.stdout
