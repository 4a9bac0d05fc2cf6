"""The `flask --app app ...` commands: score (score.py, with its regression gate gate.py and its remote mode
remote.py), simulate, users, jobs, storage and bundle (operations.py), and each kind's own (`OwnCommands.cli_commands`)."""
from __future__ import annotations

from flask import Flask

from kinds import registry
from kinds.kind import OwnCommands
from web.cli import operations, users
from web.cli.score import score_command
from web.cli.simulate import simulate_command


def register(app: Flask) -> None:
    """Add the CLI commands to the app."""
    app.cli.add_command(score_command())
    app.cli.add_command(simulate_command)
    app.cli.add_command(operations.bundle_command)
    app.cli.add_command(users.users)
    app.cli.add_command(operations.jobs)
    app.cli.add_command(operations.storage)
    for kind in registry.having(OwnCommands):  # the kinds' own commands (dialogue: `rubrics`, `ratings`)
        for command in kind.cli_commands():
            app.cli.add_command(command)
