"""``rstore check``: verify the store's structure and counters."""

from __future__ import annotations

import click

from .context import StoreOpener, json_option, pass_opener
from .jsonout import echo_json

__all__ = ["COMMANDS"]


@click.command("check", short_help="Verify the store's integrity.")
@json_option
@pass_opener
def check_command(opener: StoreOpener, as_json: bool) -> None:
    """Verify the whole store (Store.check): every stream node's structure and every stored
    counter -- stream lengths, node counts, first IDs, the groups' pending and consumer counts
    and both indexes of their pending lists.  It only reads, on one consistent snapshot, so it
    may run while other processes use the store.

    Prints OK (exit status 0), or each problem found on its own line followed by a one-line
    error on stderr (exit status 1).  --json prints {"ok": true|false, "problems": [...]}.

    \b
    Examples:
      rstore check
      rstore check --json
      rstore --store /var/lib/queue check
    """
    with opener.open(create=False) as store:
        problems = store.check()
    if as_json:
        echo_json({"ok": not problems, "problems": problems})
    elif not problems:
        click.echo("OK")
    else:
        for problem in problems:
            click.echo(" ".join(problem.split()))
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        click.echo(f"Error: the store has {len(problems)} {noun}", err=True)
        raise click.exceptions.Exit(1)


COMMANDS: list[click.Command] = [check_command]
