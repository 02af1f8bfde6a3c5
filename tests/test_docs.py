"""Every document the repository cites is in the repository.

Code, tests and docs cite pages of ``docs/`` (``docs/rdb.md#lzf`` in a docstring, a link in a
page); a page that was never added, or renamed, or a heading that moved, leaves readers with a
reference to nothing.  These tests read every ``.py``, ``.md`` and ``.c`` file of the project.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SKIP_DIRS = {"build", "dist", "node_modules", "__pycache__"}

# A markdown file named in text: an optional path, then the name (``docs/rdb.md``, ``cli.md``),
# optionally followed by ``#anchor``.  A name right after ``://`` or a word character belongs to a
# URL or a longer word and is not a citation of this repository.
_MENTION = re.compile(r"(?<![\w/:.-])((?:[\w.-]+/)*[\w.-]*\w\.md)(?:#([\w-]+))?\b")
# A markdown link or image target: ``[text](target)``.
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _project_files(*suffixes: str) -> Iterator[Path]:
    """The project's own files with these suffixes: no hidden, build or packaging folders."""
    this_file = Path(__file__).resolve()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(
            d for d in dirs if not (d.startswith(".") or d in _SKIP_DIRS or d.endswith(".egg-info"))
        )
        for name in sorted(files):
            path = Path(folder, name)
            # this file's examples name pages that do not exist, on purpose
            if path.suffix in suffixes and path != this_file:
                yield path


def _outside_code_blocks(text: str) -> Iterator[str]:
    """The lines of a markdown text that are not inside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _outside_code_blocks(page.read_text()):
        m = _HEADING.match(line)
        if m is None:
            continue
        slug = _slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def _resolve(name: str, citing: Path) -> Path | None:
    """The file a citation names: relative to the citing file, to the repository root, or (a
    bare page name) in ``docs/``."""
    candidates = [citing.parent / name, ROOT / name]
    if "/" not in name:
        candidates.append(ROOT / "docs" / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def _where(path: Path, text: str, index: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, index) + 1}"


def test_every_cited_document_exists() -> None:
    """``docs/NAME.md`` (or ``NAME.md``, ``../README.md``) in any source, test or page names a
    file of the repository, and ``#anchor`` after it a heading of that file."""
    anchors: dict[Path, set[str]] = {}
    broken = []
    for path in _project_files(".py", ".md", ".c"):
        text = path.read_text()
        for m in _MENTION.finditer(text):
            name, anchor = m.group(1), m.group(2)
            target = _resolve(name, path)
            if target is None:
                broken.append(f"{_where(path, text, m.start())}: {name} does not exist")
            elif anchor is not None:
                known = anchors.setdefault(target, _anchors(target))
                if anchor not in known:
                    broken.append(f"{_where(path, text, m.start())}: {name} has no #{anchor}")
    assert not broken, "\n".join(broken)


def test_links_between_pages_resolve() -> None:
    """Each link in README.md, DEVELOPERS.md and docs/*.md that stays in the repository points
    to an existing file, and its ``#anchor`` (also a bare ``#anchor`` in the same page) to a
    heading there."""
    pages = [
        ROOT / "README.md",
        ROOT / "DEVELOPERS.md",
        *sorted(ROOT.joinpath("docs").glob("*.md")),
    ]
    assert len(pages) > 3
    broken = []
    for page in pages:
        text = "\n".join(_outside_code_blocks(page.read_text()))
        for m in _LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = page if not file_part else (page.parent / file_part).resolve()
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not linked.exists():
                broken.append(f"{where}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{where}: no heading with that anchor")
    assert not broken, "\n".join(broken)


def test_the_checks_see_a_broken_citation(tmp_path: Path) -> None:
    """The helpers report what a missing page or heading looks like (so the tests above can
    fail)."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## `nodes` — stream nodes\n\n```\n# not a heading\n```\n")
    assert _anchors(page) == {"title", "nodes--stream-nodes"}
    mentions = [m.groups() for m in _MENTION.finditer("see docs/rdb.md#lzf, x.md; https://a/b.md")]
    assert mentions == [("docs/rdb.md", "lzf"), ("x.md", None)]
    assert _resolve("README.md", page) == ROOT / "README.md"
    assert _resolve("format.md", page) == ROOT / "docs" / "format.md"
    assert _resolve("no-such-page.md", page) is None
