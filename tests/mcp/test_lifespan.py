"""The SDK's session manager runs for the life of the process: entered on the first request
under Daphne (which sends no lifespan events), or with the lifespan events of a server that
sends them (docs/mcp.md#many-processes)."""

import asyncio

from web.mcp.app import McpEndpoint


def test_lifespan_events_start_and_stop_the_session_manager():
    async def lifespan() -> list[str]:
        endpoint = McpEndpoint()
        inbox: asyncio.Queue = asyncio.Queue()
        sent: list[str] = []

        async def send(message):
            sent.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                assert endpoint.manager._task_group is not None  # running
                await inbox.put({"type": "lifespan.shutdown"})

        await inbox.put({"type": "lifespan.startup"})
        await endpoint({"type": "lifespan"}, inbox.get, send)
        assert endpoint.manager._task_group is None  # stopped
        return sent

    assert asyncio.run(lifespan()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_without_lifespan_events_the_first_request_starts_it_once():
    async def first_requests() -> bool:
        endpoint = McpEndpoint()
        assert endpoint.manager._task_group is None
        await asyncio.gather(endpoint.running(), endpoint.running())
        return endpoint.manager._task_group is not None

    assert asyncio.run(first_requests())
