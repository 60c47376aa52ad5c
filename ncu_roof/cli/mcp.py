"""``ncu-roof mcp``: serve the library to coding agents over the Model Context Protocol (stdio)."""

from __future__ import annotations


def command() -> None:
    """Run a Model Context Protocol server on stdin/stdout (pip install 'ncu-roof[mcp]'): the tools
    diagnose (a digest in a token budget), lines, compare, timeline, table, query and capture_plan.
    See docs/agents.md for a client's configuration."""
    from ncu_roof.mcp_server import serve

    serve()
