"""CLI commands, one module each; :func:`register` adds them to the typer app."""

from __future__ import annotations

import importlib

import typer

# (command name, module under ncu_roof.cli); each module defines `command`.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("table", "table"),
    ("diagnose", "diagnose"),
    ("lines", "lines"),
    ("report", "report"),
    ("capture", "capture"),
    ("ceilings", "ceilings"),
    ("compare", "compare"),
    ("check", "check"),
    ("devices", "devices"),
    ("ingest", "ingest"),
    ("trend", "trend"),
    ("query", "query"),
    ("timeline", "timeline"),
    ("mcp", "mcp"),
)
COMMAND_NAMES = frozenset(name for name, _ in COMMANDS)


def register(app: typer.Typer, only: str | None = None) -> None:
    """Add every command to ``app`` (or only the one named ``only``)."""
    for name, module in COMMANDS:
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(f"ncu_roof.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ncu_roof.cli.{module}":
                raise
            continue  # a command still being written must not break the others
        app.command(name)(mod.command)
