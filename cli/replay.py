"""``rstore replay`` and ``rstore import``: thin fronts over :func:`rstore.run_replay`.

The source (the store, a dump, a JSONL file or stdin, a server), the selection, the ID policy,
the pace and the target come from the options; the engine does the rest (docs/replay.md).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO, NamedTuple

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, renamed_option, unescape_option
from .entry import EXIT_INTERRUPTED
from .files import file_errors
from .format import counted, show_path
from .params import range_bound, to_bytes
from .progress import progress_option
from .replay_out import echo_plan, line_format, replay_progress, summary

__all__ = ["COMMANDS"]

ID = tuple[int, int]
_MAX_ID = ((1 << 64) - 1, (1 << 64) - 1)


def _bound(text: str, *, is_end: bool, param: str) -> ID:
    ms, _, seq = range_bound(text, is_end=is_end, param=param).partition(b"-")
    return int(ms), int(seq)


def _pacer(
    speed: str | None, max_gap: str | None, rate: str | None, top_speed: bool
) -> rstore.Pacer | None:
    try:
        if top_speed:
            if speed or max_gap or rate:
                raise click.UsageError("--top-speed excludes --speed, --max-gap and --rate")
            return None
        if rate is not None and (speed is not None or max_gap is not None):
            raise click.UsageError("--rate replaces --speed and --max-gap: give one or the other")
        if speed is None and rate is None:
            if max_gap is not None:
                raise click.UsageError("--max-gap needs --speed")
            return None
        schedule = rstore.PaceSchedule(
            None if speed is None else rstore.parse_speed(speed),
            max_gap=None if max_gap is None else rstore.parse_duration(max_gap),
            rate=None if rate is None else rstore.parse_rate(rate),
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    return rstore.Pacer(schedule)


@contextlib.contextmanager
def _jsonl_file(path: str) -> Iterator[BinaryIO]:
    """The JSONL file ``path`` (``-``: stdin), open for reading; one that cannot be read is
    one error line naming it, before any store is opened."""
    if path == "-":
        yield sys.stdin.buffer
        return
    with file_errors(path, "read"), open(path, "rb") as f:
        yield f


def _jsonl_source(f: BinaryIO, name: str, sink: Any, whole_nodes: bool) -> Iterator[Any]:
    """A JSONL file's entries: as nodes built with the store's node limits for a store target
    that takes them whole (the fast path of ``import``), else one by one."""
    if whole_nodes and isinstance(sink, rstore.StoreSink):
        config = sink.store.config
        return rstore.runs_from_jsonl(
            f, name=name, node_max_bytes=config.node_max_bytes,
            node_max_entries=config.node_max_entries,
        )  # fmt: skip
    return rstore.entries_from_jsonl(f, name=name)


@contextlib.contextmanager
def _conflicts_explained(hint: str) -> Iterator[None]:
    """A :class:`rstore.ReplayConflict` as one line that names this command's options."""
    try:
        yield
    except rstore.ReplayConflict as exc:
        if not exc.avoidable:
            raise
        raise click.ClickException(f"{exc.reason} ({hint})") from None


def _jsonl_total(path: str, progress: bool | None) -> int | None:
    """The lines of the file ``path`` (``-``: stdin, when it is a regular file; counted from
    where it stands, without moving it), the total of the progress bar: ``None`` when no bar
    is shown, for a pipe, or when the file cannot be read (the import says why)."""
    if not (progress if progress is not None else sys.stderr.isatty()):
        return None
    try:
        fd = sys.stdin.buffer.fileno() if path == "-" else os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        offset = os.lseek(fd, 0, os.SEEK_CUR)
        lines, last = 0, b"\n"
        while chunk := os.pread(fd, 1 << 22, offset):
            lines += chunk.count(b"\n")
            offset += len(chunk)
            last = chunk[-1:]
        return lines + (last != b"\n")
    except OSError:
        return None
    finally:
        if path != "-":
            os.close(fd)


def _store_total(store: rstore.Store, keys: list[bytes] | None, low: ID, high: ID) -> int:
    def plan(view: rstore.StoreView) -> int:
        chosen = rstore.select_streams(view.keys(), keys)
        return sum(n.entries for k in chosen for n in view.node_index(k, low, high))

    return store.view(plan)


def _check_conflicts(
    first_of: Callable[..., Iterator[Any]],
    streams: Sequence[bytes],
    low: ID,
    high: ID,
    sink: Any,
    options: dict[str, Any],
) -> None:
    """--on-conflict fail, all or nothing: every selected stream's first entry to replay (after
    the bookmark) is compared with its target's last ID before anything is written."""
    bookmark = options["bookmark"]
    position = {} if bookmark is None else rstore.read_bookmark(sink, bookmark)
    firsts = {}
    for key in streams:
        seen = position.get(key)
        start = low if seen is None else max(low, _after(seen))
        for _stream, entry_id, _flat in first_of([key], start, high, page_nodes=1):
            firsts[key] = entry_id
            break
    rstore.check_conflicts(firsts, sink, target=options["target"])


def _after(entry_id: ID) -> ID:
    ms, seq = entry_id
    return (ms, seq + 1) if seq < (1 << 64) - 1 else (ms + 1, 0)


def _run(
    entries: Any,
    sink: Any,
    *,
    total: int | None,
    options: dict[str, Any],
    verb: str,
    target_text: str,
    to_stdout: bool,
    nothing: str = "no entries to replay in the selected streams and window",
) -> bool:
    """Run (or plan) the replay and print its summary; exit 130 when ^C stopped it; whether
    a replay ran to its end."""
    pacer = options.pop("pacer")
    as_json = options.pop("as_json")
    progress = options.pop("progress")
    if options.pop("dry_run"):
        bookmark = options.pop("bookmark")
        position = {} if bookmark is None else rstore.read_bookmark(sink, bookmark)
        plans, seconds = rstore.plan_replay(
            entries,
            sink,
            schedule=None if pacer is None else pacer.schedule,
            position=position,
            **options,
        )
        if not plans:
            raise click.ClickException(nothing)
        echo_plan(plans, seconds, target_text, as_json, pacer is not None)
        return False
    label = {"replayed": "replaying", "imported": "importing"}.get(verb, verb)
    paced = pacer is not None and pacer.schedule.paced
    with replay_progress(label, progress, total, paced) as report_progress:
        report = rstore.run_replay(entries, sink, pacer=pacer, progress=report_progress, **options)
    if not (report.delivered or report.resumed or report.skipped or report.interrupted):
        raise click.ClickException(nothing)
    summary(verb, report, as_json, to_stdout, target_text)
    if report.interrupted:
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    return True


@click.command("replay", short_help="Re-send stream history: paced, resumable, anywhere.")
@click.argument("streams", nargs=-1, metavar="[STREAM|GLOB]...")
@click.option("--from-dump", "dump_file", type=click.Path(dir_okay=False), help="Read an RDB file.")
@click.option(
    "--db",
    type=click.IntRange(min=0),
    help="The source's database (0): the dump's, or the store's.",
)
@click.option("--from-jsonl", "jsonl", metavar="FILE|-", help="Read JSON lines (export's).")
@click.option("--from-url", "from_url", metavar="URL", help="Read a Redis/Valkey server.")
@click.option("--to-stream", metavar="NAME", help="Write into stream NAME (of this store).")
@click.option("--prefix", metavar="TEXT", help="Write each stream into TEXT + its name.")
@click.option("--to-store", metavar="DIR", help="Write into the store at DIR (created).")
@click.option("--to-url", metavar="URL", help="Write into a Redis/Valkey server (pipelined).")
@click.option("--format", "fmt", metavar="json|xadd|TEMPLATE", help="Lines on stdout (json).")
@click.option("--start", default="-", metavar="ID|TIME", help="The first ID or time (default -).")
@click.option("--end", default="+", metavar="ID|TIME", help="The last ID or time (default +).")
@click.option("--count", type=click.IntRange(min=0), help="Replay at most N selected entries.")
@click.option("--where", multiple=True, metavar="FIELD=GLOB", help="Keep matching entries.")
@click.option("--new-ids", is_flag=True, help="Give every entry a new ID (as XADD *).")
@click.option(
    "--on-conflict",
    type=click.Choice(["fail", "skip", "new-id"]),
    default="fail",
    help="A kept ID not above the target's last ID: fail (default), skip, new-id.",
)
@click.option("--speed", metavar="X", help="Pace by the original timing, X times faster.")
@click.option("--max-gap", metavar="DURATION", help="With --speed: the longest wait (5s).")
@click.option("--rate", metavar="N/s", help="Pace at a fixed rate instead (500/s).")
@click.option("--top-speed", is_flag=True, help="No pacing (the default).")
@click.option("--bookmark", metavar="NAME", help="Record progress under NAME; rerun resumes.")
@renamed_option("--checkpoint", "--bookmark", "bookmark", metavar="NAME")
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing.")
@click.option("--follow", is_flag=True, help="Then go on with new entries, until ^C.")
@click.option("--with-groups", is_flag=True, help="Copy consumer groups and PELs along.")
@progress_option
@json_option
@unescape_option
@pass_opener
def replay_command(opener: StoreOpener, /, **given: Any) -> None:
    """Replay the entries of the selected streams, in ID order, into a target: stdout (JSON
    lines by default), another stream of this store (--to-stream, --prefix), another store
    (--to-store) or a Redis/Valkey server (--to-url).  The source is this store unless
    --from-dump, --from-jsonl or --from-url names another.

    Streams are names or globs (all when none); --start/--end take IDs or times (2h,
    2026-11-01T10:00); --where field=glob keeps matching entries.  Original IDs are kept
    unless --new-ids; --on-conflict says what to do with a kept ID not above the target's last
    one.  Top speed unless --speed (10, 0.5; --max-gap caps idle gaps) or --rate.  --follow
    goes on with entries added later, like `tail -f`, until ^C.  With
    --bookmark NAME progress is recorded after each write (in the target store's
    transaction, exactly once; else in the file NAME, at least once): rerun to resume.  ^C
    stops between entries (exit 130).  docs/replay.md has the details.

    \b
    Examples:
      rstore replay events --start 2026-11-17T09:00 --end 2026-11-17T10:00 --speed 10 \\
          --to-url redis://localhost:6379
      rstore replay 'orders:*' --prefix replay: --new-ids
      rstore replay --from-dump dump.rdb --to-store ./copy --bookmark copy1
      rstore export | rstore replay --from-jsonl - --rate 100/s
    """
    args = _ReplayArgs(**given)  # click passes the options by name
    opener = _checked(args, opener)
    keys = [to_bytes(s, args.unescape, "STREAM") for s in args.streams] or None
    low = _bound(args.start, is_end=False, param="--start")
    high = _bound(args.end, is_end=True, param="--end")
    target = _target(args)
    options = _engine_options(args, target)
    # into a store with the IDs kept, whole nodes are copied unchanged where the engine can
    whole_nodes = (args.to_store is not None or target is not None) and not args.new_ids
    with contextlib.ExitStack() as stack:
        stack.enter_context(_conflicts_explained("--on-conflict skip or new-id, or --new-ids"))
        source = _open_source(args, opener, stack, (keys, low, high), whole_nodes)
        sink, target_text, to_stdout = _open_sink(args, opener, stack, source.store, target)
        total = source.total
        if args.count is not None and total is not None:
            total = min(total, args.count)
        entries = source.entries
        if source.jsonl is not None and keys is None and (low, high) == ((0, 0), _MAX_ID):
            entries = _jsonl_source(*source.jsonl, sink, whole_nodes)
        # read before the replay: the groups as they were when it started
        groups = _groups_of_source(args, keys, source.store) if args.with_groups else None
        if args.bookmark is not None and not sink.transactional:  # a file of the user's
            stack.enter_context(file_errors(args.bookmark, "write"))
        check_first = args.on_conflict == "fail" and not (
            args.new_ids or args.where or args.dry_run
        )
        if source.first_of is not None and check_first:
            _check_conflicts(source.first_of, source.selected, low, high, sink, options)
        delivered = _run(
            entries,
            sink,
            total=total,
            options=options,
            verb="replayed",
            target_text=target_text,
            to_stdout=to_stdout,
        )
        if groups is not None and delivered:
            _copy_groups(groups, sink, args, target)


@dataclass(frozen=True)
class _ReplayArgs:
    """``rstore replay``'s command line as click parsed it (its parameters' names)."""

    streams: tuple[str, ...]
    dump_file: str | None
    db: int | None
    jsonl: str | None
    from_url: str | None
    to_stream: str | None
    prefix: str | None
    to_store: str | None
    to_url: str | None
    fmt: str | None
    start: str
    end: str
    count: int | None
    where: tuple[str, ...]
    new_ids: bool
    on_conflict: str
    speed: str | None
    max_gap: str | None
    rate: str | None
    top_speed: bool
    bookmark: str | None
    dry_run: bool
    follow: bool
    with_groups: bool
    progress: bool | None
    as_json: bool
    unescape: bool


def _checked(args: _ReplayArgs, opener: StoreOpener) -> StoreOpener:
    """Refuse options that do not go together (a usage error); the opener of this store, on
    the database replay's own --db names when it is not the dump's."""
    sources = [x for x in (args.dump_file, args.jsonl, args.from_url) if x is not None]
    if len(sources) > 1:
        raise click.UsageError("give one of --from-dump, --from-jsonl, --from-url")
    if args.db is not None and args.dump_file is None:
        if args.jsonl is not None or args.from_url is not None:
            raise click.UsageError("--db is the database of the dump or of this store")
        opener = opener.with_db(args.db)  # replay's own --db: this store's database
    if args.to_store is not None and args.to_url is not None:
        raise click.UsageError("give one of --to-store and --to-url")
    if args.to_stream is not None and args.prefix is not None:
        raise click.UsageError("give one of --to-stream and --prefix")
    if args.fmt is not None and (args.to_store or args.to_url or args.to_stream or args.prefix):
        raise click.UsageError("--format is for stdout")
    if args.follow and (sources or args.end != "+" or args.count is not None or args.dry_run):
        raise click.UsageError("--follow reads this store to its end: no --from-*, --end, "
                               "--count or --dry-run")  # fmt: skip
    into_target = args.to_store or args.to_url
    if args.with_groups and (
        args.jsonl or args.from_url or args.follow or args.dry_run or not into_target
    ):
        raise click.UsageError("--with-groups copies from this store or a dump into --to-store or "
                               "--to-url, without --follow or --dry-run")  # fmt: skip
    return opener


def _target(args: _ReplayArgs) -> Callable[[bytes], bytes] | None:
    """The target stream of each source stream (--to-stream, --prefix); ``None``: its name."""
    if args.to_stream is not None:
        name = to_bytes(args.to_stream, args.unescape, "--to-stream")
        return lambda _s: name
    if args.prefix is not None:
        head = to_bytes(args.prefix, args.unescape, "--prefix")
        return lambda s: head + s
    return None


def _engine_options(args: _ReplayArgs, target: Callable[[bytes], bytes] | None) -> dict[str, Any]:
    """What :func:`_run` takes of the command line: the pace, the output, the selection and
    the ID policy (--where checked)."""
    options: dict[str, Any] = {
        "pacer": _pacer(args.speed, args.max_gap, args.rate, args.top_speed),
        "as_json": args.as_json,
        "progress": args.progress,
        "dry_run": args.dry_run,
        "bookmark": args.bookmark,
        "target": target,
        "where": [to_bytes(w, args.unescape, "--where") for w in args.where],
        "count": args.count,
        "new_ids": args.new_ids,
        "on_conflict": args.on_conflict,
    }
    try:
        rstore.field_filter(options["where"])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--where") from None
    return options


class _Source(NamedTuple):
    """Where a replay reads: its entries and how many there are (the progress bar's total;
    ``None``: unknown or no bar).  A source that can look ahead (this store, a dump) gives
    the streams selected and a reader of their entries from an ID (the conflict check)."""

    entries: Any
    total: int | None = None
    store: rstore.Store | None = None  # this store, when it is the source
    first_of: Callable[..., Iterator[Any]] | None = None
    selected: Sequence[bytes] = ()
    jsonl: tuple[BinaryIO, str] | None = None  # a JSONL file, and its name as shown


def _open_source(
    args: _ReplayArgs,
    opener: StoreOpener,
    stack: contextlib.ExitStack,
    window: tuple[list[bytes] | None, ID, ID],
    whole_nodes: bool,
) -> _Source:
    """The source the options name (this store by default), open in ``stack``, reading the
    ``window``: the streams (``None``: all) and the first and last IDs."""
    keys, low, high = window
    if args.dump_file is not None:
        return _dump_source(args.dump_file, args.db or 0, window, whole_nodes)
    if args.jsonl is not None:
        name_shown = "stdin" if args.jsonl == "-" else show_path(args.jsonl)
        total = _jsonl_total(args.jsonl, args.progress)
        jsonl_file = stack.enter_context(_jsonl_file(args.jsonl))
        entries = rstore.entries_from_jsonl(jsonl_file, keys, low, high, name=name_shown)
        return _Source(entries, total, jsonl=(jsonl_file, name_shown))
    if args.from_url is not None:
        return _Source(rstore.entries_from_url(args.from_url, keys, low, high))
    store = stack.enter_context(opener.open(create=False))
    shown = args.progress if args.progress is not None else sys.stderr.isatty()
    total = _store_total(store, keys, low, high) if shown and not args.follow else None
    if args.follow:
        return _Source(rstore.follow_store(store, keys, low), total, store)
    read = rstore.runs_from_store if whole_nodes else rstore.entries_from_store
    return _Source(
        read(store, keys, low, high),
        total,
        store,
        first_of=partial(rstore.entries_from_store, store),
        selected=store.view(lambda view: rstore.select_streams(view.keys(), keys)),
    )


def _dump_source(
    dump_file: str, db: int, window: tuple[list[bytes] | None, ID, ID], whole_nodes: bool
) -> _Source:
    """Database ``db`` of an RDB file as a source, reading the ``window``."""
    keys, low, high = window
    with file_errors(dump_file, "read"):  # read once: checked whole before anything
        index = rstore.index_rdb(dump_file)
    read_rdb = rstore.runs_from_rdb if whole_nodes else rstore.entries_from_rdb
    of_db = [s for s in index if s.db == db]
    chosen = set(rstore.select_streams([s.key for s in of_db], keys))
    return _Source(
        read_rdb(dump_file, keys, low, high, db=db, index=index),
        sum(s.state.length for s in of_db if s.key in chosen),
        first_of=partial(rstore.entries_from_rdb, dump_file, db=db, index=index),
        selected=sorted(chosen),
    )


def _open_sink(
    args: _ReplayArgs,
    opener: StoreOpener,
    stack: contextlib.ExitStack,
    source_store: rstore.Store | None,
    target: Callable[[bytes], bytes] | None,
) -> tuple[Any, str, bool]:
    """The target the options name, open in ``stack``: the sink, how the summary names it,
    and whether it is stdout."""
    if args.to_url is not None:
        sink: Any = rstore.UrlSink(args.to_url)
        stack.callback(sink.close)
        return sink, sink.shown, False
    if args.to_store is not None:
        opener.note_deprecated()
        store = stack.enter_context(rstore.Store(args.to_store))
        return rstore.StoreSink(store), show_path(args.to_store), False
    if target is not None:
        if source_store is None:
            source_store = stack.enter_context(opener.open(create=True))
        return rstore.StoreSink(source_store), "this store", False
    return rstore.LinesSink(sys.stdout.buffer, line_format(args.fmt)), "stdout", True


def _groups_of_source(
    args: _ReplayArgs, keys: list[bytes] | None, source_store: rstore.Store | None
) -> dict[bytes, tuple[rstore.GroupInfo, ...]]:
    """The consumer groups of the selected streams of the source (a dump or this store)."""
    if args.dump_file is not None:
        return rstore.groups_of_rdb(args.dump_file, keys, db=args.db or 0)
    return rstore.groups_of_store(source_store, keys)  # type: ignore[arg-type]


def _copy_groups(
    groups: dict[bytes, tuple[rstore.GroupInfo, ...]],
    sink: Any,
    args: _ReplayArgs,
    target: Callable[[bytes], bytes] | None,
) -> None:
    """--with-groups: re-create the groups read at the start in the target, and say so."""
    execute = sink.store.execute if args.to_url is None else sink.client.execute_command
    # a rerun with a bookmark resumes: the groups its first run copied are updated
    existing = "fail" if args.bookmark is None else "update"
    copied = rstore.copy_groups(groups, execute, target=target, existing=existing)
    if not args.as_json:
        click.echo(
            f"copied {counted(copied.groups, 'group')}, "
            f"{counted(copied.consumers, 'consumer')}, "
            f"{counted(copied.pending, 'pending entry', 'pending entries')}"
        )


@click.command("import", short_help="Add JSON lines (export's envelope) to the store.")
@click.argument("file", default="-", metavar="[FILE|-]")
@click.option("--bookmark", metavar="NAME", help="Record progress under NAME; rerun resumes.")
@renamed_option("--checkpoint", "--bookmark", "bookmark", metavar="NAME")
@click.option(
    "--on-conflict",
    type=click.Choice(["fail", "skip", "new-id"]),
    default="fail",
    help="An ID not above the stream's last ID: fail (default), skip, new-id.",
)
@click.option("--batch", "batch_entries", type=click.IntRange(min=1), default=50_000,
              help="Entries per transaction (50000; whole nodes).")  # fmt: skip
@progress_option
@json_option
@pass_opener
def import_command(
    opener: StoreOpener,
    file: str,
    bookmark: str | None,
    on_conflict: str,
    batch_entries: int,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Add the entries of a JSON lines file (stdin by default) in rstore's envelope -- what
    `rstore export` writes -- to the store, keeping their IDs, as whole nodes built as XADD
    builds them, in big batches: each batch one transaction, all or nothing.  A malformed
    line stops the import before its batch is written.  With --bookmark NAME the position
    is recorded in each batch's transaction: rerun the same command to resume, exactly once.

    \b
    Examples:
      rstore export --store old | rstore import --store new
      rstore import events.jsonl --bookmark load-events
    """
    name_shown = "stdin" if file == "-" else show_path(file)
    hint = "--on-conflict skip leaves such entries out, --on-conflict new-id gives them new IDs"
    with (
        _jsonl_file(file) as source,
        _conflicts_explained(hint),
        opener.open(create=True) as store,
    ):
        sink = rstore.StoreSink(store)
        options: dict[str, Any] = {
            "pacer": None,
            "as_json": as_json,
            "progress": progress,
            "dry_run": False,
            "bookmark": bookmark,
            "on_conflict": on_conflict,
            "batch_entries": batch_entries,
        }
        _run(
            _jsonl_source(source, name_shown, sink, whole_nodes=True),
            sink,
            total=_jsonl_total(file, progress),
            options=options,
            verb="imported",
            target_text=opener.shown,
            to_stdout=False,
            nothing=f"no entries in {name_shown}",
        )


COMMANDS: list[click.Command] = [replay_command, import_command]
