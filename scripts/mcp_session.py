"""A recorded MCP session: the official SDK's client, in a process of its own, against a running
server (docs/mcp.md). It signs in over REST, lists the tools, opens a turn, makes a call, reads
the log, undoes the turn, and prints each step as the client sees it.

    .venv/bin/python scripts/mcp_session.py http://127.0.0.1:8000 <campaign_id> <user> <password>
        [--mode auto|legacy] [--creature <id>]
"""

import argparse
import asyncio
import json
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.mcp.client import mcp_client, mcp_url  # noqa: E402


def sign_in(base: str, username: str, password: str) -> str:
    body = json.dumps({"username": username, "password": password}).encode()
    request = urllib.request.Request(f"{base}/api/auth/token/", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["token"]


def show(step: str, answer: object) -> None:
    print(f"--> {step}")
    print(f"<-- {json.dumps(answer, default=str, sort_keys=True)[:600]}")


async def session(args: argparse.Namespace) -> None:
    token = sign_in(args.base, args.user, args.password)
    url = mcp_url(args.base, args.campaign)
    async with mcp_client(url, token, mode=args.mode) as client:
        print(f"connected to {url} (protocol {client.protocol_version})")
        tools = (await client.list_tools()).tools
        show(
            "tools/list",
            [
                {
                    "name": t.name,
                    "readOnly": t.annotations.read_only_hint,
                    "destructive": t.annotations.destructive_hint,
                    "idempotent": t.annotations.idempotent_hint,
                    "meta": t.meta,
                }
                for t in tools[:3]
            ]
            + [f"... {len(tools)} tools in all"],
        )

        async def call(name: str, arguments: dict) -> dict:
            answer = await client.call_tool(name, arguments)
            show(
                f"tools/call {name} {json.dumps(arguments)}",
                {
                    "isError": answer.is_error,
                    "text": answer.content[0].text,
                    "structuredContent": answer.structured_content,
                },
            )
            return answer.structured_content

        turn = (await call("begin_turn", {"message": "I scout the crypt."}))["turn"]
        moved = {"creature_id": args.creature, "x": 4, "y": 2}
        await call("move_token", moved)
        await call("modify_creature", {"creature_id": args.creature, "hp_delta": -3})
        await call("recent_log", {"limit": 3})
        await call("undo_turn", {"turn_id": turn})
        await call("get_state", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("campaign")
    parser.add_argument("user")
    parser.add_argument("password")
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--creature", type=int, default=1)
    asyncio.run(session(parser.parse_args()))


if __name__ == "__main__":
    main()
