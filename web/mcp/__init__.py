"""The MCP surface: an outside agent's tools for one campaign over Streamable HTTP
(docs/mcp.md). It translates only: `app` (the ASGI gate and the SDK's server), `tools` (what a
client lists), `calls` (a call as a service call and back)."""
