"""An export's zip, read with bounds: `Archive(path)` checks the whole archive before any
member is read, and refuses it in one line when it is not a zip, holds more than
`MAX_MEMBERS` members, names a member outside itself (a `..` part, an absolute path or a
drive), is a zip bomb, or is encrypted.

Bombs: the members an export may read (`READ_SUFFIXES`: pages, tables, JSON, nested zips)
may unpack to `MAX_UNPACKED` bytes in all (five times what a DOCX's parts may:
`tether.ingest.parse.docx.MAX_UNPACKED`, the same declared-size check), and none of them
may inflate more than `MAX_RATIO` times its packed size once past 1 MB (text packs 5 to 15
times; a run of zeros packs a thousand times). `zipfile` never returns more than a
member's declared size and checks its CRC, so a member that lies about its size fails as a
damaged archive. One member is read whole only up to `tether.ingest.discover.MAX_BYTES`
(20 MB): a larger one is that document's problem (`TooLarge`), not the archive's.

Nested zips (a Notion export's `Part-1.zip`...): `Archive.nested(name)` copies the inner
zip to a temporary file, counted against the same budget, and opens it with the same
checks, one level deep.

What it cannot do: it never extracts to disk (no file is written but a nested part's
temporary copy), so the `..` refusal guards no write: it refuses an archive that was made
to escape; symbolic links and attachments (images, PDFs) are listed but not read here.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from tether.errors import ParseError, TetherError
from tether.ingest.discover import MAX_BYTES, too_big
from tether.ingest.parse.blocks import short
from tether.ingest.parse.docx import MAX_UNPACKED as DOCX_UNPACKED

MAX_MEMBERS = 200_000
MAX_UNPACKED = 5 * DOCX_UNPACKED  # bytes the members an export reads may unpack to, in all
MAX_RATIO = 200  # times a member read may inflate its packed size (past `RATIO_FLOOR`)
RATIO_FLOOR = 1_000_000
READ_SUFFIXES = (".html", ".htm", ".md", ".csv", ".json", ".zip")
_DRIVE = re.compile(r"^[A-Za-z]:")
# what reading a damaged member raises (zipfile, zlib and the OS)
_DAMAGED = (
    zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError,
)  # fmt: skip


class TooLarge(ParseError):
    """A member over the per-document limit: that document's problem."""


class _Budget:
    """The bytes the members read may still unpack to (shared with nested parts)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0


class Archive:
    """A zip checked as a whole on opening (see the module docstring); `names` are its
    regular members (macOS's `__MACOSX/` copies and `.DS_Store` left out)."""

    def __init__(
        self,
        path: Path,
        *,
        label: str | None = None,
        budget: _Budget | None = None,
        handle: IO[bytes] | None = None,
    ) -> None:
        self.path = path
        self.label = label or str(path)
        self._handle = handle
        self._budget = budget or _Budget(MAX_UNPACKED)
        try:
            self.zip = zipfile.ZipFile(handle if handle is not None else path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise TetherError(f"{self.label}: not a zip archive ({short(exc)})") from None
        try:
            self.infos = self._check(self.zip.infolist())
        except BaseException:
            self.close()
            raise
        self.names = list(self.infos)

    def _check(self, infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        if len(infos) > MAX_MEMBERS:
            raise TetherError(
                f"{self.label}: {len(infos):,} members, over the {MAX_MEMBERS:,} limit; refused"
            )
        kept: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename
            if escapes(name):
                raise TetherError(
                    f"{self.label}: member {name!r} leads outside the archive (a '..' part or"
                    " an absolute path); refused"
                )
            if info.is_dir() or name.startswith("__MACOSX/") or name.endswith(".DS_Store"):
                continue
            if name.lower().endswith(READ_SUFFIXES):
                if info.flag_bits & 0x1:
                    raise TetherError(f"{self.label}: {name} is encrypted; refused")
                packed = max(info.compress_size, 1)
                if info.file_size > RATIO_FLOOR and info.file_size / packed > MAX_RATIO:
                    raise TetherError(
                        f"{self.label}: {name} inflates {info.file_size / packed:,.0f} times"
                        f" ({info.file_size / 1e6:,.0f} MB from {packed:,} bytes): a zip bomb;"
                        " refused"
                    )
                self._budget.used += info.file_size
            kept[name] = info
        if self._budget.used > self._budget.limit:
            raise TetherError(
                f"{self.label}: its documents unpack to {self._budget.used / 1e6:,.0f} MB, over"
                f" the {self._budget.limit / 1e6:g} MB limit (a zip bomb?); refused"
            )
        return kept

    def size(self, name: str) -> int:
        return self.infos[name].file_size

    def modified_ns(self, name: str) -> int:
        """The member's date as the zip records it (local time, as UTC), in nanoseconds."""
        try:
            when = datetime(*self.infos[name].date_time, tzinfo=UTC)
        except ValueError:
            return 0
        return int(when.timestamp()) * 1_000_000_000

    def read(self, name: str, limit: int = MAX_BYTES) -> bytes:
        """The member's bytes; `TooLarge` past `limit`, a `TetherError` (the whole export's
        error) when the archive is damaged there."""
        info = self.infos[name]
        if info.file_size > limit:
            raise TooLarge(too_big(info.file_size, limit))
        try:
            with self.zip.open(info) as member:
                return member.read(limit + 1)
        except _DAMAGED as exc:
            raise self._damaged(name, exc) from None

    def _damaged(self, name: str, exc: BaseException) -> TetherError:
        """The whole export's error for a member that cannot be read."""
        return TetherError(f"{self.label}: {name} cannot be read: {short(exc)} (a damaged archive)")

    def nested(self, name: str) -> Archive:
        """The zip member `name` opened as an archive (one level: a part of a Notion
        export), through a temporary copy, under the same budget and checks."""
        info = self.infos[name]
        spool = tempfile.TemporaryFile(prefix="tether-part-")  # noqa: SIM115 (the archive's)
        try:
            with self.zip.open(info) as member:
                shutil.copyfileobj(member, spool, 1 << 20)
            spool.seek(0)
        except _DAMAGED as exc:
            spool.close()
            raise self._damaged(name, exc) from None
        self._budget.used -= info.file_size  # counted by its own members from here
        try:
            inner = Archive(
                self.path, label=f"{self.label} › {name}", budget=self._budget, handle=spool
            )
        except BaseException:
            spool.close()
            raise
        if any(n.lower().endswith(".zip") for n in inner.names):
            inner.close()
            raise TetherError(f"{self.label} › {name}: a zip inside a zip inside a zip; refused")
        return inner

    def close(self) -> None:
        self.zip.close()
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def escapes(name: str) -> bool:
    """Whether a member's name leads outside the archive: a `..` part, an absolute path, a
    drive, or a NUL (either slash counts: a zip made on Windows)."""
    parts = re.split(r"[\\/]", name)
    return (
        "\x00" in name
        or name.startswith(("/", "\\"))
        or bool(_DRIVE.match(name))
        or any(part == ".." for part in parts)
    )


def stem_and_folders(name: str) -> tuple[str, tuple[str, ...]]:
    """A member's file name and the folders above it."""
    path = PurePosixPath(name)
    return path.name, tuple(path.parts[:-1])
