"""The ``rstore`` command group: global options, central error handling, command registration.

Adding commands: write a module with click commands (or a click group, e.g. ``group`` with
``create``/``destroy``/``setid``) that take a :class:`~rstore_cli.context.StoreOpener` through
:data:`~rstore_cli.context.pass_opener`, list them in the module's ``COMMANDS``, and add their
names to :data:`COMMAND_INDEX` below.  Errors need no handling in the command: rstore's
exceptions are mapped once, in :meth:`RStoreGroup.invoke`.  Document the command in
``docs/cli.md`` (a test fails otherwise).

Start-up: a command's module is imported only when that command runs (``rstore --help``
imports them all), and ``rstore`` itself loads its modules on first use, so ``rstore len``
loads click, this module, the ``streams`` module and the store -- nothing else.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from typing import Any, NoReturn

import click

import rstore

from .context import ERROR_PREFIX, StoreOpener, global_options, late_options
from .entry import EXIT_INTERRUPTED

__all__ = [
    "COMMAND_INDEX",
    "COMMAND_MODULES",
    "EXIT_INTERRUPTED",
    "CommandFailed",
    "RStoreGroup",
    "cli",
    "main",
]

#: Every command and the module of ``rstore_cli`` that defines it, in the order
#: ``rstore --help`` lists them.
COMMAND_INDEX: dict[str, str] = {
    "add": "streams",
    "range": "reading",
    "export": "export",
    "replay": "replay",
    "import": "replay",
    "len": "streams",
    "info": "streams",
    "trim": "streams",
    "del-entries": "entries",
    "setid": "entries",
    "tail": "tail",
    "group": "groups",
    "read-group": "consume",
    "ack": "consume",
    "nack": "consume",
    "pending": "pending",
    "claim": "pending",
    "autoclaim": "pending",
    "keys": "keyspace",
    "del": "keyspace",
    "save": "snapshots",
    "restore": "snapshots",
    "dump": "snapshots",
    "restore-key": "snapshots",
    "inspect": "inspecting",
    "check": "maintenance",
    "upgrade": "maintenance",
    "compact": "maintenance",
    "salvage": "salvage",
    "retention": "retention",
    "exec": "execute",
    "serve": "serve",
    "top": "top",
    "metrics": "metrics",
    "report": "report",
}

#: The command modules, in the order of :data:`COMMAND_INDEX`.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_INDEX.values()))

DEBUG_ENV = "RSTORE_DEBUG"


class CommandFailed(click.ClickException):
    """A command that ran and failed: one line on stderr, exit status 1."""

    exit_code = 1

    def __init__(self, message: str, prefix: str = "Error: ") -> None:
        # One line whatever the message holds; bytes of a name that is not UTF-8 (kept as
        # surrogates by the library) shown as \xHH.
        raw = message.encode("utf-8", "surrogateescape")
        super().__init__(" ".join(raw.decode("utf-8", "backslashreplace").split("\n")))
        self.prefix = prefix

    def show(self, file: Any = None) -> None:
        click.echo(f"{self.prefix}{self.format_message()}", file=file, err=file is None)


def _with_late_options(command: click.Command) -> click.Command:
    """Let ``command`` (and, for a group, its subcommands) take the global options after its
    name too (see :func:`rstore_cli.context.late_options`), those whose flags it does not have
    itself (``range --db`` is range's own)."""
    names = {param.name for param in command.params}
    flags = {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}
    command.params.extend(
        o for o in late_options() if o.name not in names and flags.isdisjoint(o.opts)
    )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _with_late_options(sub)
    return command


class RStoreGroup(click.Group):
    """A group that lists commands in :data:`COMMAND_INDEX` order, imports a command's module
    when the command is used, and maps errors once for all."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMAND_INDEX, *(name for name in self.commands if name not in COMMAND_INDEX)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_INDEX:
            module = importlib.import_module(f"rstore_cli.{COMMAND_INDEX[cmd_name]}")
            for command in module.COMMANDS:
                if command.name not in self.commands:
                    self.add_command(command)
        return self.commands.get(cmd_name)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(_with_late_options(cmd), name)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:  # while parsing the command line: same status as below
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except rstore.ResponseError as exc:  # a refused command: Redis's exact error line
            raise CommandFailed(exc.line, ctx.meta.get(ERROR_PREFIX, "Error: ")) from exc
        except rstore.RStoreError as exc:  # StorageError (no store, not a store), bad data, ...
            raise CommandFailed(str(exc)) from exc
        except KeyboardInterrupt:
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            raise  # `rstore range s | head`: click's main() exits quietly
        except OSError as exc:  # a file no command named: its name and the reason in words
            from .files import os_error_text  # noqa: PLC0415 - only when it happens

            raise CommandFailed(os_error_text(exc)) from exc
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise CommandFailed(
                f"unexpected {type(exc).__name__}: {exc} (a bug in rstore; set "
                f"{DEBUG_ENV}=1 to see the traceback)"
            ) from exc


@click.group(
    cls=RStoreGroup,
    invoke_without_command=True,  # no command: the help, with the commands (_no_command)
    subcommand_metavar="COMMAND [ARGS]...",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@global_options
@click.version_option(rstore.__version__, "-V", "--version", prog_name="rstore")
@click.pass_context
def cli(ctx: click.Context, /, **settings: Any) -> None:
    """rstore: a durable embedded log store with Redis Streams semantics.

    Every command works on the store directory given by --store (or $RSTORE_PATH).  Global
    options go before or after the command.  Use `rstore COMMAND --help` for a command's
    options and examples, and docs/cli.md for the output formats, the JSON mapping and the
    exit codes.

    \b
    Examples:
      rstore add events user=42 action=login
      rstore range events --count 10
      rstore range events --since 1h --store /var/lib/queue
    """
    ctx.obj = StoreOpener(**settings)
    if ctx.invoked_subcommand is None:
        _no_command(ctx)


def _no_command(ctx: click.Context) -> NoReturn:
    """``rstore`` alone: the help, which lists the commands, on stdout (exit 0).  Global
    options without a command: the same on stderr, then a usage error (exit 2)."""
    given = any(
        ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        for name in ctx.params
    )
    if not given:
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit(0)
    click.echo(ctx.get_help(), err=True, color=ctx.color)
    click.echo("Error: no command given (the commands are above)", err=True)
    ctx.exit(2)


def all_commands() -> dict[str, click.Command]:
    """Every command of :data:`cli`, importing every command module (for help and tests)."""
    ctx = click.Context(cli)
    for name in COMMAND_INDEX:
        cli.get_command(ctx, name)
    return dict(cli.commands)


def _tolerant_stdio() -> None:
    """Never crash on a terminal whose encoding cannot show a character: escape it instead."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the CLI (the ``rstore`` console script goes through :func:`rstore_cli.entry.main`)."""
    _tolerant_stdio()
    cli.main(args=argv, prog_name="rstore")
    sys.exit(0)  # cli.main() exits itself in standalone mode; this is for the type checker
