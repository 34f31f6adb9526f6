"""A server on the official Python SDK 2.x (`MCPServer`), which speaks both protocol eras
(2025-11-25 with `initialize`, 2026-07-28 stateless), for tests/peers_py2.rs.

`python2_server.py stdio` serves stdio; `python2_server.py streamable-http` binds 127.0.0.1 on
port 0 and prints `PORT <n>` once it listens.

Tools: `add(a, b)`, `shout(text)`, `confirm(question)` (asks the client to confirm: an
`elicitation/create` request in the legacy era, an `input_required` result in the modern one;
text `confirmed: true|false`), `touch(uri)` (tells the subscribers `uri` changed: through
`subscriptions/listen` in the modern era, `notifications/resources/updated` on the session in
the legacy one), `grow()` (announces a tools list change). Resource `note://today`. Prompt
`review(code)`.
"""

import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import InputRequiredResult
from pydantic import BaseModel

server = MCPServer("python2-peer", instructions="A Python SDK 2.x server used by mcp-blocking's tests.")


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Upper-cases its text.")
def shout(text: str) -> str:
    return text.upper() + "!"


class Confirmation(BaseModel):
    confirmed: bool


@server.tool(description="Asks the client to confirm.")
async def confirm(question: str, ctx: Context):
    if (ctx.protocol_version or "") >= "2026-07-28":
        answers = ctx.input_responses
        if not answers:
            return InputRequiredResult.model_validate(
                {
                    "inputRequests": {
                        "confirm": {
                            "method": "elicitation/create",
                            "params": {
                                "mode": "form",
                                "message": question,
                                "requestedSchema": Confirmation.model_json_schema(),
                            },
                        }
                    },
                    "requestState": "asked",
                }
            )
        answer = answers["confirm"]
        content = answer.get("content") if isinstance(answer, dict) else getattr(answer, "content", None)
        return f"confirmed: {str(bool((content or {}).get('confirmed'))).lower()} (state {ctx.request_state})"
    result = await ctx.elicit(question, Confirmation)
    confirmed = result.action == "accept" and result.data.confirmed
    return f"confirmed: {str(confirmed).lower()} (state asked)"


@server.tool(description="Tells the subscribers that `uri` changed.")
async def touch(uri: str, ctx: Context) -> str:
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_resource_updated(uri)
    else:
        await ctx.session.send_resource_updated(uri)
    return "touched"


@server.tool(description="Announces a tools list change.")
async def grow(ctx: Context) -> str:
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return "grown"


@server.resource("note://today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return "buy milk"


@server.prompt()
def review(code: str) -> str:
    """Asks for a review."""
    return f"Please review: {code}"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run()
        return
    app = server.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
