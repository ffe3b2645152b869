"""Who is asking: the keys file of `tether serve`, and a per-key rate limit.

A keys file (TOML, or JSON when its name ends in .json) names each key, the audience it sees
(public or staff) and the key's SHA-256 digest, never the key itself:

    allow_anonymous = true        # no key: the public audience (false: 401)
    [[keys]]
    name = "helpdesk"
    audience = "staff"
    sha256 = "9f86d081884c7d65..."

A request shows its key as `Authorization: Bearer KEY`; the key's digest is looked up in
constant time. The keys are random 256-bit strings (`new_key`), so a plain SHA-256 is as
strong as a slow KDF would be; a key someone chose by hand would not be.

`remove_key` takes a key out of the file (`tether keys revoke`). A server on a PostgreSQL
collection also refuses the keys revoked in the store (`tether.server.shared`), within a
couple of seconds; `RateLimiter` is the in-process bucket of a server over an index file (on a
PostgreSQL collection the buckets are the store's, shared by every server on it).

What it cannot do: it does not watch the file (a key added or removed takes effect when the
server restarts; a revocation recorded in a PostgreSQL store takes effect at once) and keeps
no record of who used which key; `RateLimiter` counts for one process only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import ConflictError, NotFoundError, TetherError
from tether.protocols import SharedState
from tether.types import Audience

KEY_PREFIX = "tk_"
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class ApiKey:
    """A named key and the audience it sees."""

    name: str
    audience: Audience


ANONYMOUS = ApiKey("anonymous", "public")


def digest(key: str) -> str:
    """The hex SHA-256 of `key` (what the keys file stores)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class KeyRing:
    """The keys a server accepts, by digest, and whether a request without one is served
    (as the public audience)."""

    keys: dict[str, ApiKey] = field(default_factory=dict)
    allow_anonymous: bool = False

    def lookup(self, key: str) -> ApiKey | None:
        """The ApiKey whose digest matches `key`, else None (compared in constant time)."""
        wanted = digest(key)
        found = None
        for known, api_key in self.keys.items():
            if hmac.compare_digest(known, wanted):
                found = api_key
        return found

    @classmethod
    def of(cls, keys: dict[str, Audience], *, allow_anonymous: bool = False) -> KeyRing:
        """A KeyRing from plain {key: audience} (for tests and embedding); names are k1, k2…"""
        return cls(
            {digest(k): ApiKey(f"k{n}", a) for n, (k, a) in enumerate(keys.items(), 1)},
            allow_anonymous,
        )


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TetherError(f"cannot read the keys file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TetherError(
            f"the keys file {path} is not UTF-8 text (byte {exc.start}): write it as UTF-8"
        ) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise TetherError(f"{path} is not valid {_kind(path)}: {exc}") from None
    if not isinstance(data, dict):
        raise TetherError(f"{path}: expected a table with `keys` and `allow_anonymous`")
    return data


def _kind(path: Path) -> str:
    return "JSON" if path.suffix == ".json" else "TOML"


def load_keys(path: Path, *, allow_anonymous: bool | None = None) -> KeyRing:
    """The KeyRing of the keys file at `path`; `allow_anonymous`, when given, wins over the
    file's. A malformed file is a TetherError naming the entry."""
    data = _read(path)
    keys: dict[str, ApiKey] = {}
    names: set[str] = set()
    for n, entry in enumerate(data.get("keys", []), 1):
        if not isinstance(entry, dict):
            raise TetherError(f"{path}: key {n} is not a table")
        name, audience, hashed = entry.get("name"), entry.get("audience"), entry.get("sha256")
        if not isinstance(name, str) or not NAME.match(name):
            raise TetherError(f"{path}: key {n} needs a name of letters, digits, _ . -")
        if audience not in ("public", "staff"):
            raise TetherError(
                f"{path}: key {name!r} has audience {audience!r}, not public or staff"
            )
        if not isinstance(hashed, str) or not re.fullmatch(r"[0-9a-f]{64}", hashed):
            raise TetherError(f"{path}: key {name!r} needs sha256 = the key's hex SHA-256")
        if name in names or hashed in keys:
            raise TetherError(f"{path}: key {name!r} appears twice")
        names.add(name)
        keys[hashed] = ApiKey(name, audience)
    anonymous = data.get("allow_anonymous", False)
    if not isinstance(anonymous, bool):
        raise TetherError(f"{path}: allow_anonymous must be true or false")
    return KeyRing(keys, anonymous if allow_anonymous is None else allow_anonymous)


def key_ring(path: Path | None, *, allow_anonymous: bool = False) -> KeyRing:
    """The keys `tether serve` accepts: the keys file at `path` (`allow_anonymous` True
    serves callers without a key whatever the file says), or, without a file, none: every
    caller is anonymous (public)."""
    if path is None:
        return KeyRing(allow_anonymous=True)
    return load_keys(path, allow_anonymous=True if allow_anonymous else None)


def check_key_name(name: str) -> str:
    """`name` when it can name a key, else a TetherError saying what a name is."""
    if not NAME.match(name):
        raise TetherError(f"{name!r} is not a key's name (1-64 letters, digits, _ . -)")
    return name


def add_key(path: Path, name: str, audience: str) -> str:
    """Add a new key named `name` for `audience` to the keys file at `path` (created when
    missing) and return the key, which is stored only as its digest."""
    check_key_name(name)
    if audience not in ("public", "staff"):
        raise TetherError(f"audience {audience!r} is not public or staff")
    if path.exists():
        ring = load_keys(path)
        if name in {k.name for k in ring.keys.values()}:
            raise ConflictError(f"{path} already has a key named {name!r}")
    key = new_key()
    entry = {"name": name, "audience": audience, "sha256": digest(key)}
    if path.suffix == ".json":
        data: dict[str, Any] = _read(path) if path.exists() else {"allow_anonymous": False}
        data["keys"] = [*data.get("keys", []), entry]
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    else:
        head = "" if path.exists() else "allow_anonymous = false\n"
        block = "".join(f'{k} = "{v}"\n' for k, v in entry.items())
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{head}\n[[keys]]\n{block}")
    return key


def remove_key(path: Path, name: str) -> str:
    """Take the key named `name` out of the keys file at `path`; its digest. The other
    entries, and in a TOML file the comments and layout around them, are kept; a TOML file
    whose entries are not `[[keys]]` tables is a TetherError that says to edit it by hand."""
    found = _digest_of(path, name)
    data = _read(path)
    kept = [e for e in data.get("keys", []) if e.get("name") != name]
    if path.suffix == ".json":
        path.write_text(json.dumps({**data, "keys": kept}, indent=2) + "\n", encoding="utf-8")
        return found
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^(?=[ \t]*\[\[[ \t]*keys[ \t]*\]\][ \t]*(?:#.*)?$)", text)
    left = [p for p in parts if not _names(p, name)]
    new_text = "".join(left)
    try:
        loaded = tomllib.loads(new_text)
        same = {**loaded, "keys": loaded.get("keys", [])} == {**data, "keys": kept}
    except tomllib.TOMLDecodeError:
        same = False
    if len(left) != len(parts) - 1 or not same:
        raise TetherError(
            f"cannot take {name!r} out of {path} by itself (its keys are not [[keys]] tables):"
            " delete its entry by hand"
        )
    path.write_text(new_text, encoding="utf-8")
    return found


def revoke_key(path: Path, name: str, shared: SharedState | None = None) -> bool | None:
    """Revoke the key named `name` of the keys file at `path`: record its digest in `shared`
    (what the servers on a store share; first, so that the file keeps the key when that
    fails), then take it out of the file. True when the store had not revoked it yet, False
    when it had, None without a store (the servers reading the file refuse the key once
    restarted)."""
    fresh = shared.revoke(name, _digest_of(path, name)) if shared is not None else None
    remove_key(path, name)
    return fresh


def _digest_of(path: Path, name: str) -> str:
    """The digest of the key named `name` in the keys file at `path` (a NotFoundError when
    it has none)."""
    check_key_name(name)
    found = [d for d, k in load_keys(path).keys.items() if k.name == name]
    if not found:
        raise NotFoundError(f"{path} has no key named {name!r}")
    return found[0]


def _names(part: str, name: str) -> bool:
    """Whether `part` of a TOML keys file is the `[[keys]]` table of `name`."""
    try:
        entries = tomllib.loads(part).get("keys", [])
    except tomllib.TOMLDecodeError:
        return False
    return len(entries) == 1 and isinstance(entries[0], dict) and entries[0].get("name") == name


class RateLimiter:
    """A token bucket per name (a key, or a client address) in this process: `rate` requests
    a second on average, bursts of `burst` (`tether.protocols.Limiter`). At most
    `MAX_BUCKETS` names are remembered: past that, the names whose bucket has refilled are
    forgotten (a full bucket is what a new name gets)."""

    MAX_BUCKETS = 10_000
    remote = False

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}  # name: (tokens, at)
        self._lock = threading.Lock()

    def _tokens(self, name: str, now: float) -> float:
        tokens, at = self._buckets.get(name, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def take(self, name: str) -> float:
        """0 when `name` may make a request now (one token taken), else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens = self._tokens(name, now)
            if len(self._buckets) >= self.MAX_BUCKETS and name not in self._buckets:
                self._forget_full(now)
            if tokens >= 1:
                self._buckets[name] = (tokens - 1, now)
                return 0.0
            self._buckets[name] = (tokens, now)
            return (1 - tokens) / self.rate

    def peek(self, name: str) -> float:
        """What `take` would answer, without taking a token."""
        if self.rate <= 0:
            return 0.0
        with self._lock:
            tokens = self._tokens(name, time.monotonic())
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate

    def _forget_full(self, now: float) -> None:
        full = [n for n in self._buckets if self._tokens(n, now) >= self.burst]
        for name in full:
            del self._buckets[name]
