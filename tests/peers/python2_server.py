"""A server on the official Python SDK 2.x (`MCPServer`), which speaks both protocol eras
(2025-11-25 with `initialize`, 2026-07-28 stateless), for tests/peers_py2.rs.

`python2_server.py stdio` serves stdio; `python2_server.py streamable-http` binds 127.0.0.1 on
port 0 and prints `PORT <n>` once it listens.

Tools: `add(a, b)`, `shout(text)`. Resource `note://today`. Prompt `review(code)`.
"""

import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("python2-peer", instructions="A Python SDK 2.x server used by mcp-blocking's tests.")


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Upper-cases its text.")
def shout(text: str) -> str:
    return text.upper() + "!"


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
