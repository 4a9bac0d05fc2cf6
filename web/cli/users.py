"""The `flask --app app users ...` commands: create, list and delete accounts, set passwords."""
from __future__ import annotations

import click
from flask.cli import with_appcontext

from translations import _
from web import accounts, get_store


def _password(from_stdin: bool) -> str:
    """The new password: one line of stdin for scripts, else asked twice without echo."""
    if from_stdin:
        with click.open_file("-") as stdin:  # click's text stdin, left open
            return stdin.readline().rstrip("\r\n")
    return click.prompt(_("Password"), hide_input=True, confirmation_prompt=True)


def _run(action, *args):
    """Call an accounts function, turning its ValueError into a clean CLI error (exit status 1)."""
    try:
        return action(get_store(), *args)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


password_stdin = click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")


@click.group("users")
def users() -> None:
    """Dashboard accounts (used when AUTH=on, or when HOST is not a loopback address)."""


@users.command("create")
@with_appcontext
@click.argument("name")
@click.option("--admin", is_flag=True, help="May also change the judge settings.")
@password_stdin
def create(name: str, admin: bool, password_stdin: bool) -> None:
    """Create the account NAME."""
    user = _run(accounts.create_user, name, _password(password_stdin), admin)
    click.echo(_("created %(role)s %(name)s", role=_("admin") if user["is_admin"] else _("member"), name=user["name"]))


@users.command("list")
@with_appcontext
def list_() -> None:
    """List the accounts."""
    for user in accounts.list_users(get_store()):
        click.echo(f"{user['name']}\t{_('admin') if user['is_admin'] else _('member')}\t{user['created_at']}")


@users.command("delete")
@with_appcontext
@click.argument("name")
@click.confirmation_option(prompt="Delete this account and its API tokens?")
def delete(name: str) -> None:
    """Delete the account NAME and its API tokens."""
    _run(accounts.delete_user, name)
    click.echo(_("deleted %(name)s", name=name))


@users.command("set-password")
@with_appcontext
@click.argument("name")
@password_stdin
def set_password(name: str, password_stdin: bool) -> None:
    """Give NAME a new password (which signs them out everywhere)."""
    _run(accounts.set_password, name, _password(password_stdin))
    click.echo(_("password changed for %(name)s", name=name))
