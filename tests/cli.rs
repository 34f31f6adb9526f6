//! The `mcpb` command line against the fixture server.
