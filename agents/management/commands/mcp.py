import asyncio
import os

from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from agents import credentials
from agents.server import CURRENT, build_server

TOKEN_VARIABLE = "COMPANION_MEMORY_TOKEN"


class Command(BaseCommand):
    help = (
        "Serve the memory tools over MCP on stdin and stdout (SPEC §15 M2) for the connection "
        f"whose token is in {TOKEN_VARIABLE}. The token is checked again on every call, so a "
        "revoked or expired connection is refused from its next call."
    )

    def handle(self, *args, **options):
        raw = os.environ.get(TOKEN_VARIABLE, "")
        if credentials.authenticate(raw) is None:
            raise CommandError(
                f"{TOKEN_VARIABLE} must hold a live connection token (Connected assistants page)."
            )
        asyncio.run(_serve(raw))


async def _serve(raw: str) -> None:
    CURRENT.set(lambda: credentials.authenticate(raw))
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
