"""The ``rstore`` command-line interface (installed as the package ``rstore_cli``).

It is a thin front over the public façade :class:`rstore.Store`: every command opens a store,
calls one method, and prints the result.  Layout:

* :mod:`rstore_cli.main` -- the ``rstore`` group, its global options, central error handling and
  the list of command modules;
* :mod:`rstore_cli.context` -- the shared option decorators and the store opener;
* :mod:`rstore_cli.params` -- argument parsing (escapes, ``FIELD=VALUE`` pairs);
* :mod:`rstore_cli.replies` -- replies turned into plain records (entries, XINFO trees);
* :mod:`rstore_cli.format` -- human output, including redis-cli's reply format;
* :mod:`rstore_cli.jsonout` -- the JSON mapping used by ``--json``;
* :mod:`rstore_cli.streams`, :mod:`rstore_cli.tail`, :mod:`rstore_cli.groups`,
  :mod:`rstore_cli.consume`, :mod:`rstore_cli.pending`, :mod:`rstore_cli.keyspace`,
  :mod:`rstore_cli.maintenance`, :mod:`rstore_cli.execute` -- commands.
"""
