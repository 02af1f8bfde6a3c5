"""Redis 8.2's reference policies on the command line: the ``--ref`` option of ``add``,
``trim``, ``del-entries`` and ``ack --delete``, and the per-ID results of the last two (XDELEX,
XACKDEL)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from .jsonout import echo_json

__all__ = [
    "ACK_RESULTS", "DELETE_RESULTS", "POLICIES", "check_ref", "echo_results", "policy_arg",
    "ref_option",
]  # fmt: skip

POLICIES = ("keepref", "delref", "acked")

ref_option: Callable[[Any], Any] = click.option(
    "--ref",
    "ref",
    type=click.Choice(POLICIES, case_sensitive=False),
    metavar="POLICY",
    help=(
        "What becomes of consumer groups' references to removed entries (Redis 8.2): keepref "
        "(the default) leaves them pending, delref removes them from every group's pending "
        "list, acked removes only entries that every group has acknowledged."
    ),
)

#: XDELEX's codes, as ``del-entries --ref`` prints them.
DELETE_RESULTS = {-1: "not found", 1: "deleted", 2: "kept (a group still references it)"}
#: XACKDEL's codes, as ``ack --delete`` prints them.
ACK_RESULTS = {
    -1: "not pending",
    1: "acknowledged, deleted",
    2: "acknowledged, kept (a group still references it)",
}


def check_ref(ref: str | None, approx: bool, has_strategy: bool) -> None:
    """Refuse a ``--ref`` that would do nothing: without a trimming strategy, or with
    ``--approx`` under delref / acked (Redis 8.2 removes whole nodes under keepref only)."""
    if ref is None:
        return
    if not has_strategy:
        raise click.UsageError("--ref needs --maxlen or --minid")
    if approx and ref.lower() != "keepref":
        raise click.UsageError(
            f"--approx trims nothing with --ref {ref.lower()} (Redis 8.2 removes whole nodes "
            "under keepref only); drop --approx"
        )


def policy_arg(ref: str | None) -> list[bytes]:
    """The policy's argument of a command, or none for the default."""
    return [] if ref is None else [ref.upper().encode()]


def echo_results(
    ids: Sequence[str], codes: list[int], words: dict[int, str], as_json: bool
) -> None:
    """One line per ID (``ID result``), or a JSON list of ``{"id", "code", "result"}``."""
    rows = [(i, code, words.get(code, str(code))) for i, code in zip(ids, codes)]
    if as_json:
        echo_json([{"id": i, "code": code, "result": word} for i, code, word in rows])
        return
    for i, _, word in rows:
        click.echo(f"{i} {word}")
