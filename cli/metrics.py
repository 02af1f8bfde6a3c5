"""``metrics``: a queue's health in Prometheus's text exposition format, printed once or
served over HTTP (:mod:`rstore.monitor.metrics`)."""

from __future__ import annotations

import sys
import threading

import click

import rstore

from .context import StoreOpener, pass_opener
from .watching import pattern_bytes, watched, watching_options

__all__ = ["COMMANDS"]


@click.command("metrics", short_help="Print or serve the store's health as Prometheus metrics.")
@watching_options
@click.option(
    "--serve",
    "port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve the metrics at http://BIND:PORT/metrics until ^C, a new sample per scrape "
    "(0: a free port, printed on stderr).",
)
@click.option(
    "--bind",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDRESS",
    help="The address --serve listens on.",
)
@pass_opener
def metrics(
    opener: StoreOpener, url: str | None, pattern: str | None, port: int | None, bind: str
) -> None:
    """Print the store's health as Prometheus metrics: per stream its length, entries added
    and deleted, the last entry's age; per consumer group its lag, pending entries, entries
    delivered, consumers, the oldest pending entry's age and idle time; the store's files and
    log flushes; from a server (--url), its clients, commands and errors too.  The store is
    opened read-only.  docs/monitoring.md lists every metric and a Grafana query for lag.

    \b
    Examples:
      rstore metrics
      rstore metrics --match 'orders:*'
      rstore metrics --serve 9121
      rstore metrics --url redis://localhost:6379
    """
    with watched(opener, url) as source:
        wanted = pattern_bytes(pattern)
        if port is None:
            sys.stdout.buffer.write(rstore.metrics_text(source, wanted))
            sys.stdout.flush()
            return
        try:
            server, _ = rstore.serve_metrics(source, port, bind, wanted)
        except OSError as exc:
            raise click.ClickException(f"cannot serve on {bind}:{port}: {exc.strerror}") from None
        click.echo(
            f"serving metrics of {source.name} on http://{bind}:{server.server_port}/metrics "
            "(^C stops)",
            err=True,
        )
        try:
            threading.Event().wait()  # until ^C (KeyboardInterrupt: the CLI's exit status)
        finally:
            server.shutdown()
            server.server_close()


COMMANDS = [metrics]
