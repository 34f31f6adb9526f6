"""A small MCP server on the official Python SDK, spoken to over stdio by tests/peers_stdio.rs.

Tools: `add(a, b)` (a structured result), `shout(text)`, `count_down(steps)` (reports progress
for each step), `fail()` (raises `ToolError`: a result with `isError`). Resource `note://today`, template
`note://by-day/{day}`, prompt `review(language, focus="bugs")`.

Works with the SDK's `MCPServer` (mcp 2.x) and its former name `FastMCP` (mcp 1.x).
"""

try:
    from mcp.server.mcpserver import Context, MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError

server = Server("python-peer", instructions="A Python SDK server used by mcp-blocking's tests.")


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Upper-cases its text.")
def shout(text: str) -> str:
    return text.upper() + "!"


@server.tool(description="Counts down from `steps`, reporting progress at each step.")
async def count_down(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
    return f"counted down from {steps}"


@server.tool(description="Always fails.")
def fail() -> str:
    # A ToolError's message reaches the client; any other exception's is withheld.
    raise ToolError("this tool fails on purpose")


@server.resource("note://today", name="today", mime_type="text/plain", description="Today's note.")
def today() -> str:
    return "Water the plants."


@server.resource("note://by-day/{day}", name="by-day", mime_type="text/plain")
def by_day(day: str) -> str:
    return f"Note for {day}."


@server.prompt(description="Asks for a code review.")
def review(language: str, focus: str = "bugs") -> str:
    return f"Review this {language} code, looking for {focus}."


if __name__ == "__main__":
    server.run()
