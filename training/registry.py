"""The data-set registry (`training/datasets.toml`): each set's path, format and role per model.

`sets_for(model, role)` lists the sets a model may read in that role; `require(model, name,
role)` raises when a set's role is not the one asked (a trainer asks for `train`, so a held-out
set can never be trained on by mistake). `digest(path)` is the sha256 of a set's files, in
path order, which a model's card records.

What it cannot do: it trusts the roles written in the file; it does not know what a person read.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "training" / "datasets.toml"
ROLES = ("train", "tuned", "heldout")


@dataclass(frozen=True)
class DataSet:
    name: str
    path: Path
    format: str
    roles: dict[str, str]
    members: tuple[str, ...] = ()

    def role(self, model: str) -> str | None:
        return self.roles.get(model)


def load() -> dict[str, DataSet]:
    data = tomllib.loads(REGISTRY.read_text(encoding="utf-8"))
    out: dict[str, DataSet] = {}
    for name, entry in data["sets"].items():
        roles = dict(entry.get("roles", {}))
        bad = [r for r in roles.values() if r not in ROLES]
        if bad:
            raise ValueError(f"{REGISTRY}: set {name!r} has unknown roles {bad}")
        out[name] = DataSet(name, ROOT / entry["path"], entry["format"], roles,
                            tuple(entry.get("members", ())))  # fmt: skip
    return out


def sets_for(model: str, role: str) -> list[DataSet]:
    return [s for s in load().values() if s.role(model) == role]


def require(model: str, name: str, role: str) -> DataSet:
    s = load()[name]
    if s.role(model) != role:
        raise PermissionError(f"set {name!r} has role {s.role(model)!r} for {model}, not {role!r}")
    return s


def digest(
    path: Path, suffixes: tuple[str, ...] = (".jsonl", ".json", ".md", ".txt", ".html")
) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in suffixes)
    for p in files:
        h.update(p.relative_to(path).as_posix().encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()
