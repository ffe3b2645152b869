"""Discovery: the files of a collection folder that tether may read, and reading one safely.

`scan(folder, follow_links=False)` walks the folder (sorted, recursive) and returns a `Scan`:
the files tether can read (.md/.markdown, .html/.htm, .pdf, .txt, .docx, .rst; hidden files and
folders and `inventory.csv` skipped), the other files counted by suffix (`unsupported`: ".gz"
-> 2, "(no suffix)" for a name without one), the entries it skipped with the reason (`skipped`: a link that leads
out of the folder, a link to a folder, a name that is not UTF-8), the second paths to a file
already found (`aliases`) and the sub-folders it could not list (`unreadable`: their documents
keep their previous version). `discover(folder)` is its list of files. `SUFFIXES` maps a suffix
to its format (`tether.ingest.parse.formats`).

One file is one document, read once: of the paths that lead to one file (a link to a file
that is also found at its own path, two links to one file, hard links), the first by name that
is not a link is read, else the first link; the others are its `aliases`.

Links: a link to a file inside the folder is read at the link's path; a link that leads out of
the folder (file or folder) is not followed unless `follow_links=True`; a link to a folder
inside the folder is not followed (its files are read at their own path). With
`follow_links=True` a folder already walked (a link loop) is walked once.

`read_regular(path, max_bytes)` reads one file: only a regular file (a FIFO, socket or device,
or a link to one, is refused without being opened for reading), its size checked with `stat`
before reading and the read itself bounded, so a file that grows or lies cannot make it read
more than `max_bytes + 1` bytes.

What it cannot do: it looks at names only (a .txt that holds binary is found here and refused
by the parser); it does not follow the inventory (a file listed there but absent is not found);
a link's target is checked when the folder is walked, so a link swapped between the walk and
the read is read where it then leads (still only a regular file, still bounded).
"""

from __future__ import annotations

import os
import stat as stat_module
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import ParseError, TetherError
from tether.ingest.parse.formats import SUFFIXES  # suffix → format, derived from FORMATS

NO_SUFFIX = "(no suffix)"
INVENTORY_FILE = "inventory.csv"
MAX_BYTES = 20_000_000  # the largest file read by default
_NOT_FOLLOWED = "leads out of the collection folder; not followed (--follow-links follows it)"


@dataclass
class Scan:
    """What walking a collection folder found."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, reason)
    # (relative path, the relative path it is read at): a second path to a file already found
    aliases: list[tuple[str, str]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (relative folder, reason)
    unsupported: dict[str, int] = field(default_factory=dict)  # suffix -> files not read


def discover(folder: Path) -> list[Path]:
    """The readable files under `folder`, recursively, sorted by relative path (see `scan`).

    Raises `TetherError` when `folder` is not a directory or cannot be listed.
    """
    return scan(folder).files


def scan(folder: Path, *, follow_links: bool = False) -> Scan:
    """Walk `folder` (see the module docstring); hidden entries and `inventory.csv` are skipped,
    the suffix match ignores case."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TetherError(f"collection folder not found: {folder}")
    root = os.path.realpath(folder)
    result = Scan()
    found: list[tuple[str, Path, tuple[int, int] | None, bool]] = []
    walked = {root}
    pending: list[tuple[Path, str]] = [(folder, "")]
    while pending:
        path, rel = pending.pop()
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            if not rel:
                raise TetherError(
                    f"cannot read the collection folder {folder}: {exc.strerror or exc}"
                ) from None
            result.unreadable.append((rel, f"cannot read folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            name = entry.name
            child = f"{rel}/{name}" if rel else name
            if name.startswith(".") or name.lower() == INVENTORY_FILE:
                continue
            folder_like = _is_dir(entry)
            suffix = Path(name).suffix.lower()
            if not folder_like and suffix not in SUFFIXES:
                key = _printable(suffix) if suffix else NO_SUFFIX
                result.unsupported[key] = result.unsupported.get(key, 0) + 1
                continue
            if not _utf8(name):
                result.skipped.append((_printable(child), "the name is not valid UTF-8"))
                continue
            reason = _link_reason(entry, root, folder_like, follow_links)
            if reason is not None:
                result.skipped.append((child, reason))
            elif folder_like:
                real = os.path.realpath(entry.path)
                if real in walked:
                    result.skipped.append((child, "link loop: this folder is already read"))
                else:
                    walked.add(real)
                    pending.append((Path(entry.path), child))
            else:
                found.append((child, Path(entry.path), _identity(entry), _is_link(entry)))
    found.sort(key=lambda item: item[0])
    result.files, result.aliases = _read_once(found)
    result.skipped.sort()
    result.unreadable.sort()
    return result


def _identity(entry: os.DirEntry[str]) -> tuple[int, int] | None:
    """(device, inode) of the file an entry leads to; None when unknown."""
    try:
        st = entry.stat()  # follows a link
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st.st_ino else None


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _read_once(
    found: list[tuple[str, Path, tuple[int, int] | None, bool]],
) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files to read, in `found`'s order, each file once: of the paths that lead to one
    file (links, hard links), the first that is not a link is read, else the first; the
    others are its aliases, (alias, the path read)."""
    keeper: dict[tuple[int, int], str] = {}
    for child, _, identity, _link in sorted(found, key=lambda item: (item[3], item[0])):
        if identity is not None:
            keeper.setdefault(identity, child)
    files: list[Path] = []
    aliases: list[tuple[str, str]] = []
    for child, path, identity, _ in found:
        read = keeper.get(identity, child) if identity is not None else child
        if read == child:
            files.append(path)
        else:
            aliases.append((child, read))
    return files, aliases


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a link
    except OSError:
        return False


def _link_reason(
    entry: os.DirEntry[str], root: str, folder_like: bool, follow_links: bool
) -> str | None:
    """Why a link is not followed (None: it is, or the entry is not a link)."""
    try:
        if not entry.is_symlink():
            return None
    except OSError:
        return None
    if follow_links:
        return None
    if not leads_inside(entry.path, root):
        return f"a link that {_NOT_FOLLOWED}"
    if folder_like:
        return "a link to a folder inside the collection; not followed (its files are read there)"
    if Path(entry.path).suffix.lower() != Path(os.path.realpath(entry.path)).suffix.lower():
        # a name of another format would read the file otherwise: a `.txt` name for a
        # Markdown file skips its front matter, and with it the file's access label
        return "a link to a file of another type inside the collection; not followed"
    return None


def leads_inside(path: str | Path, root: str | Path) -> bool:
    """Whether `path`, links resolved, lies inside the folder `root` (itself resolved)."""
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes in the name come back as surrogates
        return False
    return True


def _printable(rel: str) -> str:
    return os.fsencode(rel).decode("utf-8", errors="backslashreplace")


def _kind(mode: int) -> str:
    for test, word in (
        (stat_module.S_ISFIFO, "a FIFO"),
        (stat_module.S_ISSOCK, "a socket"),
        (stat_module.S_ISCHR, "a character device"),
        (stat_module.S_ISBLK, "a block device"),
        (stat_module.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return word
    return "not a plain file"


def _check(st: os.stat_result, max_bytes: int) -> None:
    if not stat_module.S_ISREG(st.st_mode):
        raise ParseError(f"not a regular file ({_kind(st.st_mode)}); it is not read")
    if st.st_size > max_bytes:
        raise ParseError(too_big(st.st_size, max_bytes))


def read_regular(path: Path, max_bytes: int = MAX_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `path` and its `stat`, read only when it is a regular
    file of at most `max_bytes` (checked before opening and again on the open file). Raises
    `ParseError` with a one-line reason otherwise, or when it cannot be read."""
    try:
        _check(os.stat(path), max_bytes)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb", closefd=True) as handle:
            st = os.fstat(handle.fileno())
            _check(st, max_bytes)
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ParseError(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ParseError(too_big(len(data), max_bytes))
    return data, st


def too_big(size: int, limit: int) -> str:
    """The reason a file of `size` bytes is refused under `limit`."""
    if limit >= 1_000_000:
        return f"file is {size / 1e6:.1f} MB, over the {limit / 1e6:g} MB limit"
    return f"file is {size:,} bytes, over the {limit:,} bytes limit"
