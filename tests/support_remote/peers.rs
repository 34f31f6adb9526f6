//! Installs and starts real MCP peers under `target/peers/` (filled in below).
