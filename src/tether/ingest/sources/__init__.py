"""Sources of documents other than a folder: a website (`web`) and the exports of help centers
and wikis (`exports`: Zendesk, Confluence, Notion), each a `tether.ingest.sources.base.Source`
that `tether.ingest.sources.sync.sync_source` brings an index in line with.

Modules: `base` (the protocol, items, where sources are remembered), `sync` (one sync of a
source, with the folder sync's parts), `web` (a site under a start URL), and the website's
parts: `fetch` (the polite HTTP client), `robots` (robots.txt by Protego), `sitemap`,
`links` (URLs, scope, links and canonical of a page, formats by Content-Type), `web_settings`
(a crawl's settings and summary).

`open_source(kind, location, settings)` builds a remembered source again (what `tether sync`
needs); `source_at(store, location, **given)` the source at a location with the settings the
index remembers for it, the `given` ones (not None) winning; `is_url(location)`: whether a
location names a website rather than a folder.

What it cannot do: this package marker holds no crawling logic; see each module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.errors import TetherError
from tether.ingest.sources.base import Source
from tether.protocols import StoreReader


def is_url(location: str) -> bool:
    """Whether `location` names a website (http or https) rather than a folder."""
    return location.strip().lower().startswith(("http://", "https://"))


def open_source(kind: str, location: str, settings: Mapping[str, Any] | None = None) -> Source:
    """The source of `kind` at `location` with remembered `settings`; `TetherError` for a
    kind this tether does not know."""
    if kind == "web":
        from tether.ingest.sources.web import WebSettings, WebSource

        return WebSource(location, WebSettings.of(settings or {}))
    from tether.ingest.sources.exports import KINDS, open_export

    if kind in KINDS:
        return open_export(kind, location, settings or {})
    raise TetherError(f"a remembered source of an unknown kind {kind!r} ({location})")


def source_at(store: StoreReader, location: str, **given: Any) -> Source:
    """The source at `location` (an http(s) URL: a website) with the settings `store`
    remembers for it (its last sync's), `given` values that are not None winning; a
    location the index does not remember gets the defaults."""
    from tether.ingest.sources.links import normal
    from tether.ingest.sources.sync import remembered_sources
    from tether.ingest.sources.web import WebSettings, WebSource

    start = normal(location)
    if start is None or not is_url(location):
        raise TetherError(f"not an http(s) URL: {location}")
    entry = remembered_sources(store).get(f"{WebSource.kind}:{start}", {})
    recorded = entry.get("settings") if isinstance(entry.get("settings"), dict) else {}
    return WebSource(start, WebSettings.of(recorded or {}, **given))
