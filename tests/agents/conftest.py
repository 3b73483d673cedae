"""The tools' tests call them as the MCP server does (`agents.server.run_tool`), one
connection at a time."""

import pytest

from agents.server import run_tool
from agents.services import connection_create


def tool_caller(connection):
    def call(name, arguments=None):
        answer = run_tool(lambda: connection, name, arguments)
        return answer.body, answer.is_error

    return call


@pytest.fixture
def connect():
    """A connection of `user` with `access` (and `characters`), as a tool caller."""

    def make(user, access="forget", characters=None):
        created = connection_create(user=user, name="Desk", access=access, characters=characters)
        return tool_caller(created.connection)

    return make
