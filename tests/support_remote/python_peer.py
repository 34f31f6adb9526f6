"""A Python MCP SDK (FastMCP) server for the remote transport tests.

Usage: python python_peer.py streamable-http|sse
Binds 127.0.0.1 on port 0 and prints `PORT <n>` once it listens.
"""
import socket
import sys

import uvicorn
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("python-peer")


@mcp.tool()
def add(a: float, b: float) -> str:
    """Adds two numbers."""
    return str(a + b)


@mcp.tool()
async def count(steps: int, ctx: Context) -> str:
    """Reports progress once per step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps)
    return f"counted {steps}"


@mcp.resource("test://greeting")
def greeting() -> str:
    """A fixed text."""
    return "hello from python"


@mcp.prompt()
def review(code: str) -> str:
    """Asks for a review."""
    return f"Please review: {code}"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "streamable-http"
    app = mcp.streamable_http_app() if mode == "streamable-http" else mcp.sse_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
