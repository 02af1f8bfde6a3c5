"""The ``rstore`` command group: global options, central error handling, command registration.

Adding commands: write a module with click commands (or a click group, e.g. ``group`` with
``create``/``destroy``/``setid``) that take a :class:`~rstore_cli.context.StoreOpener` through
:data:`~rstore_cli.context.pass_opener`, list them in the module's ``COMMANDS``, and add the
module to :data:`COMMAND_MODULES` below.  Errors need no handling in the command: rstore's
exceptions are mapped once, in :meth:`RStoreGroup.invoke`.  Document the command in
``docs/cli.md`` (a test fails otherwise).
"""

from __future__ import annotations

import io
import os
import sys
from types import ModuleType
from typing import Any, NoReturn

import click

import rstore

from . import (
    check,
    consume,
    execute,
    groups,
    inspecting,
    keyspace,
    pending,
    snapshots,
    streams,
    tail,
)
from .context import ERROR_PREFIX, StoreOpener

__all__ = ["COMMAND_MODULES", "CommandFailed", "RStoreGroup", "cli", "main"]

#: Modules whose ``COMMANDS`` make up the CLI, in the order ``rstore --help`` lists them.
COMMAND_MODULES: tuple[ModuleType, ...] = (
    streams,
    tail,
    groups,
    consume,
    pending,
    keyspace,
    snapshots,
    inspecting,
    check,
    execute,
)

#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130

DEBUG_ENV = "RSTORE_DEBUG"


class CommandFailed(click.ClickException):
    """A command that ran and failed: one line on stderr, exit status 1."""

    exit_code = 1

    def __init__(self, message: str, prefix: str = "Error: ") -> None:
        # Keep it to one line whatever the message holds.
        super().__init__(" ".join(message.split("\n")))
        self.prefix = prefix

    def show(self, file: Any = None) -> None:
        click.echo(f"{self.prefix}{self.format_message()}", file=file, err=file is None)


class RStoreGroup(click.Group):
    """A group that lists commands in registration order and maps errors once for all."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

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
        except OSError as exc:
            raise CommandFailed(str(exc)) from exc
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise CommandFailed(
                f"unexpected {type(exc).__name__}: {exc} (a bug in rstore; set "
                f"{DEBUG_ENV}=1 to see the traceback)"
            ) from exc


@click.group(
    cls=RStoreGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--store",
    "store_path",
    metavar="PATH",
    type=click.Path(file_okay=True, dir_okay=True, path_type=str),
    envvar="RSTORE_PATH",
    show_envvar=True,
    default=os.path.join(".", rstore.DEFAULT_PATH),
    show_default=True,
    help="The store directory.  Commands that only read or delete never create it; `add`, "
    "and `exec` with XADD, XGROUP or CONFIG, create it when it is missing.",
)
@click.version_option(rstore.__version__, "-V", "--version", prog_name="rstore")
@click.pass_context
def cli(ctx: click.Context, store_path: str) -> None:
    """rstore: a durable embedded log store with Redis Streams semantics.

    Every command works on the store directory given by --store (or $RSTORE_PATH).  Use
    `rstore COMMAND --help` for a command's options and examples, and docs/cli.md for the
    output formats, the JSON mapping and the exit codes.

    \b
    Examples:
      rstore add events user=42 action=login
      rstore range events --count 10
      rstore --store /var/lib/queue exec XINFO STREAM events
    """
    ctx.obj = StoreOpener(store_path)


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def _tolerant_stdio() -> None:
    """Never crash on a terminal whose encoding cannot show a character: escape it instead."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point (``rstore``)."""
    _tolerant_stdio()
    cli.main(args=argv, prog_name="rstore")
    sys.exit(0)  # cli.main() exits itself in standalone mode; this is for the type checker
