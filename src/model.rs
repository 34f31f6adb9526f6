//! MCP model types.
