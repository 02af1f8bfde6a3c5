"""What every command shares: the global options, the store opener, the common option decorators.

A command receives the :class:`StoreOpener` built from the global options and opens the store
itself, saying whether it may create one::

    @click.command("len")
    @click.argument("stream")
    @json_option
    @pass_opener
    def len_command(opener: StoreOpener, stream: str, as_json: bool) -> None:
        with opener.open(create=False) as store:
            length = store.xlen(to_bytes(stream))
        ...

**Global options** are listed once, in :data:`GLOBAL_OPTIONS`: each sets one field of
:class:`StoreOpener`.  The ``rstore`` group takes them before the command; :func:`late_options`
makes copies that every command also accepts after its name (``rstore len jobs --store q``),
hidden from its help, where they override the ones given before.  Adding a global option means
one entry there and one field in :class:`StoreOpener`.

Errors are not handled here: :class:`rstore_cli.main.RStoreGroup` maps them once for all.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

import rstore

if TYPE_CHECKING:
    from rstore import Store

__all__ = [
    "ERROR_PREFIX",
    "GLOBAL_OPTIONS",
    "GlobalOption",
    "StoreOpener",
    "global_options",
    "json_option",
    "late_options",
    "pass_opener",
    "renamed_option",
    "unescape_option",
]

F = TypeVar("F", bound=Callable[..., Any])

# Key in ``click.Context.meta``: the text printed before an rstore error's message.  ``exec``
# sets it to redis-cli's ``(error) ``; every other command keeps ``Error: ``.
ERROR_PREFIX = "rstore_cli.error_prefix"

#: The highest database number of a store (``--db``): 16 databases, as Redis has by default.
MAX_DB = 15


_WAL_NOTED = "rstore.wal-noted"  # the note on --wal/--no-wal was printed (per command line)


class StoreOpener(NamedTuple):
    """The store the global options point at, opened on demand.

    ``path`` is ``None`` until a ``--store`` (or ``$RSTORE_PATH``) names one: then
    :attr:`store_path` is ``./rstore-data``."""

    path: str | None = None
    readonly: bool | None = None
    wal: bool | None = None
    db: int | None = None

    @property
    def store_path(self) -> str:
        return self.path or os.path.join(".", rstore.DEFAULT_PATH)

    @property
    def shown(self) -> str:
        """The store as messages name it: ``PATH``, or ``PATH (db N)`` with ``--db N``."""
        path = os.fsencode(self.store_path).decode("utf-8", "backslashreplace")
        return f"{path} (db {self.db})" if self.db else path

    def note_deprecated(self) -> None:
        """One line on stderr, once per command line, when ``--wal`` or ``--no-wal`` was
        given."""
        context = click.get_current_context(silent=True)
        noted = context.find_root().meta if context is not None else {}
        if self.wal is not None and not noted.get(_WAL_NOTED):
            noted[_WAL_NOTED] = True
            click.echo(
                "note: --wal/--no-wal are deprecated and ignored: every store has the "
                "write-ahead log (store format 3)",
                err=True,
            )

    def with_db(self, db: int) -> StoreOpener:
        """This opener on database ``db`` of the store: a command's own ``--db`` when it
        names the store's database (``range --db 3`` without ``--from-dump``)."""
        if not 0 <= db <= MAX_DB:
            raise click.BadParameter(
                f"the store's databases are 0 to {MAX_DB}, not {db}", param_hint="'--db'"
            )
        return self._replace(db=db)

    def open(self, *, create: bool) -> Store:
        """Open the store -- database ``--db N`` of it when given (:func:`rstore.database_path`:
        ``PATH/dbN``, as ``SELECT N`` of ``rstore serve`` uses it).  With ``create=False`` a
        missing store raises :class:`rstore.StoreNotFoundError` (``no store at PATH``), and so
        does a database the store does not have, instead of being created.

        With ``--read-only`` the store is opened read-only (never created).  Without it, a store
        this user cannot write (another user's, read-only media) is opened read-only all the
        same unless the command creates stores: read commands work, and a write is refused
        with :class:`rstore.ReadOnlyStoreError` saying why.

        Always ``sync=True``: a CLI call is one process and one write, so ``sync=False`` would
        save one fsync (about 0.5 ms) out of the process start-up (docs/cli.md).

        ``--wal`` / ``--no-wal`` are deprecated and ignored (a note on stderr)."""
        self.note_deprecated()
        if not self.db:
            return self._open_at(self.store_path, create)
        with self._open_at(self.store_path, create) as store:  # the store must be there
            if not create and self.db not in store.databases():
                raise rstore.StoreNotFoundError(
                    f"no database {self.db} in the store at {store.path} (`rstore inspect` "
                    "lists its databases)"
                )
        return self._open_at(rstore.database_path(self.store_path, self.db), create)

    def _open_at(self, path: str, create: bool) -> Store:
        if self.readonly:
            return rstore.Store(path, readonly=True, create=False)
        try:
            return rstore.Store(path, create=create)
        except (rstore.ReadOnlyStoreError, rstore.StoreInUseError):
            # Not this user's to write, or of an older format that others hold open (so it
            # cannot be upgraded now): readers read it as it is, writers are told why not.
            if create:
                raise
            return rstore.Store(path, readonly=True, create=False)


class GlobalOption(NamedTuple):
    """A global option: its flags, the :class:`StoreOpener` field it sets, and the rest of its
    :class:`click.Option` settings (help, metavar, type, envvar...) as given before the
    command."""

    flags: tuple[str, ...]
    target: str
    settings: Mapping[str, Any]


GLOBAL_OPTIONS: tuple[GlobalOption, ...] = (
    GlobalOption(
        ("--store",),
        "path",
        {
            "metavar": "PATH",
            "type": click.Path(file_okay=True, dir_okay=True, path_type=str),
            "envvar": "RSTORE_PATH",
            "show_envvar": True,
            "help": "The store directory (default: ./rstore-data).  Commands that only read or "
            "delete never create it; `add`, and `exec` with XADD, XGROUP or CONFIG, create it "
            "when it is missing.  May also follow the command.",
        },
    ),
    GlobalOption(
        ("--read-only",),
        "readonly",
        {
            "is_flag": True,
            "help": "Open the store read-only: every write is refused.  A store this user "
            "cannot write (another user's, on read-only media) is opened read-only anyway for "
            "commands that only read.  May also follow the command.",
        },
    ),
    GlobalOption(
        ("--db",),
        "db",
        {
            "metavar": "N",
            "type": click.IntRange(0, MAX_DB),
            "help": "Work on database N of the store (0 to 15; default 0), the one `SELECT N` "
            "of `rstore serve` uses: the store in PATH/dbN.  Commands that only read never "
            "create it.  May also follow the command.",
        },
    ),
    GlobalOption(
        ("--wal/--no-wal",),
        "wal",
        {
            "hidden": True,
            "help": "Deprecated and ignored: every store has the write-ahead log (format 3).",
        },
    ),
)


def global_options(f: F) -> F:
    """The global options of the ``rstore`` group; the callback gets them as keyword arguments
    named after their :class:`StoreOpener` fields (``None`` when not given)."""
    for option in reversed(GLOBAL_OPTIONS):
        f = click.option(*option.flags, option.target, default=None, **option.settings)(f)
    return f


def _late_callback(
    name: str, is_flag: bool
) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None or (is_flag and value is False and not param.secondary_opts):
            return  # not given after the command: the value given before stands
        opener = ctx.find_object(StoreOpener) or StoreOpener()
        ctx.obj = opener._replace(**{name: value})

    return callback


def late_options() -> list[click.Option]:
    """Copies of the global options for a command's own parameters (see the module docstring):
    hidden, no default and no environment variable, and given after the command they replace
    the :class:`StoreOpener` the command receives."""
    late = []
    for option in GLOBAL_OPTIONS:
        settings = {
            key: value
            for key, value in option.settings.items()
            if key not in ("envvar", "show_envvar", "default", "hidden")
        }
        is_flag = bool(settings.get("is_flag"))
        late.append(
            click.Option(
                list(option.flags),
                expose_value=False,
                default=None,
                hidden=True,
                callback=_late_callback(option.target, is_flag),
                **settings,
            )
        )
    return late


pass_opener = click.make_pass_decorator(StoreOpener, ensure=True)


def json_option(f: F) -> F:
    """``--json``: machine-readable output (the mapping is in :mod:`rstore_cli.jsonout`)."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print JSON instead of text (strings that are not UTF-8 become "
        '{"base64": ...}; see docs/cli.md).',
    )(f)


def unescape_option(f: F) -> F:
    """``--unescape``: read redis-cli style backslash escapes in the arguments."""
    return click.option(
        "--unescape",
        "-e",
        is_flag=True,
        help="Read backslash escapes in the arguments as redis-cli does inside double quotes "
        "(\\xHH, \\n, \\t, \\\\ ...).  By default arguments are passed byte for byte.",
    )(f)


def renamed_option(old: str, new: str, dest: str, **settings: Any) -> Callable[[F], F]:
    """``old``, the spelling of the option ``new`` (value in the parameter ``dest``) before it
    was renamed: hidden from --help, it still works for one release, with one note on stderr;
    giving both is a usage error (DEVELOPERS.md, "Renaming a public name")."""
    hidden = f"renamed_{dest}"

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden)
            if value is not None:
                if kwargs[dest] is not None:
                    raise click.UsageError(f"give {new} only ({old} is its deprecated name)")
                click.echo(f"note: {old} is deprecated, use {new} (the same option)", err=True)
                kwargs[dest] = value
            return f(*args, **kwargs)

        option = click.option(old, hidden, hidden=True, help=f"Deprecated: {new}.", **settings)
        return option(command)  # type: ignore[return-value]

    return decorate
