"""``rstore check`` (verify the store's files, checksums and counters) and ``rstore upgrade``
(rewrite a store of an older on-disk format)."""

from __future__ import annotations

import click

import rstore

from .context import StoreOpener, json_option, pass_opener
from .format import counted
from .jsonout import echo_json
from .progress import progress_reporter

__all__ = ["COMMANDS"]


@click.command("check", short_help="Verify the store's integrity.")
@json_option
@pass_opener
def check_command(opener: StoreOpener, as_json: bool) -> None:
    """Verify the whole store (rstore.check_store): LMDB's structure walked from the file,
    every record's checksum, every stream node's structure and every stored counter --
    stream lengths, node counts, first IDs, the groups' pending and consumer counts and both
    indexes of their pending lists.  It only reads, on one consistent snapshot, so it may run
    while other processes use the store; it also answers for a store too damaged to open,
    naming each damaged page with its sub-database and the streams it held.

    Prints OK (exit status 0), or each problem found on its own line followed by a one-line
    error on stderr (exit status 1).  --json prints {"ok": true|false, "problems": [...]}.

    \b
    Examples:
      rstore check
      rstore check --json
      rstore --store /var/lib/queue check
    """
    problems = rstore.check_store(rstore.database_path(opener.store_path, opener.db or 0))
    if as_json:
        echo_json({"ok": not problems, "problems": problems})
    elif not problems:
        click.echo("OK")
    else:
        for problem in problems:
            click.echo(" ".join(problem.split()))
    if problems:
        click.echo(f"Error: the store has {counted(len(problems), 'problem')}", err=True)
        raise click.exceptions.Exit(1)


@click.command("upgrade", short_help="Rewrite a store of an older format.")
@json_option
@pass_opener
def upgrade_command(opener: StoreOpener, as_json: bool) -> None:
    """Rewrite the store in the current on-disk format (format 2: a checksum on every
    record), in one transaction: all or nothing.  A store of an older format is read by this
    rstore but not written until it is upgraded; a current store is left as it is.  Other
    processes may keep the store open; they see the upgraded store on their next command.

    \b
    Examples:
      rstore upgrade --json
      rstore upgrade --store /var/lib/queue
    """
    with opener.open(create=False) as store, progress_reporter("upgrading", None) as report:
        records = store.upgrade(progress=report)
    if as_json:
        echo_json({"upgraded": records > 0, "records": records})
    elif records:
        click.echo(f"upgraded: {counted(records, 'record')} rewritten with checksums")
    else:
        click.echo("already current: nothing to do")


COMMANDS: list[click.Command] = [check_command, upgrade_command]
