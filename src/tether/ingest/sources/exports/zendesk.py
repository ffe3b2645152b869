"""Zendesk Guide articles, as the Help Center API returns them: `tether ingest articles.json`
(one page of `GET /api/v2/help_center/articles.json`, `{"articles": [...], "next_page": ...}`,
or one article, `{"article": {...}}`), or a folder of such pages saved one per file.

Each article (id, html_url, title, body, locale, source_locale, author_id, section_id,
created_at, updated_at, edited_at, draft, user_segment_id, user_segment_ids,
permission_group_id, label_names, outdated...) becomes one document:
- its body (HTML) under its title goes through the HTML parser (hidden text dropped);
- `source`: its `html_url` without the title's slug (`https://h/hc/en-us/articles/123`,
  which Zendesk serves as the live article, and which a title edit does not change); from
  `url` (the API's) when it has no `html_url`;
- doc_id: `zendesk/ID`, or `zendesk/ID/LOCALE` for a translation (a locale other than its
  `source_locale`), stable across title edits;
- access: `user_segment_id` null (and no `user_segment_ids`): visible to everyone, `public`;
  any segment (signed-in users, agents, a group or organization): `staff`, never public. An
  article without the field carries no label (the index's default access decides).
  `permission_group_id` says who may edit, not who may read: it decides nothing;
- language: `locale` ("en-us" -> en); version: `edited_at`, else `updated_at`;
- owner: the author's name when the page sideloads `users` (`?include=users`); the pages
  above it (its `trail`): the category and section names when the pages sideload `sections`
  and `categories` (`?include=sections,categories`), or a folder holds `sections.json` /
  `categories.json` pages beside them;
- `draft: true` articles are skipped, counted and reported (one indexed before leaves).

Refused, each in one line: a file that is not such a page, a lone page that says more follow
(`next_page`, `meta.has_more`: the other pages' articles would be removed), the incremental
export (`end_time`: only what changed), a page over 200 MB.

What it cannot do: `label_names`, `outdated`, `promoted`, `vote_sum`, `created_at`,
`comments_disabled` and `content_tag_ids` have no document field (lost); a segment's rules
(who exactly may read) are not in the article, so every restricted article is staff; a help
center that requires signing in for everything still says `user_segment_id: null` (its
articles would be public: ingest such an export with care); attachments and images are not
read; no API call is made (the pages are read as saved).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tether.errors import ParseError, TetherError
from tether.ingest.discover import SUFFIXES, read_regular
from tether.ingest.parse.blocks import short
from tether.ingest.parse.docx import MAX_UNPACKED
from tether.ingest.sources.base import Sink
from tether.ingest.sources.exports.common import (
    ExportSource,
    Page,
    constant,
    html_page,
    iso_ns,
    one_line,
)

MAX_FILE = MAX_UNPACKED  # bytes of one saved page (200 MB)
MAX_FILES = 10_000
SIDELOADS = ("sections", "categories", "users")
_SLUG = re.compile(r"(/articles/\d+)-[^/?#]*")


def is_articles_page(value: Any) -> bool:
    """Whether a JSON value is a Help Center API answer holding articles."""
    return isinstance(value, dict) and (
        isinstance(value.get("articles"), list) or isinstance(value.get("article"), dict)
    )


def _is_sideload_page(value: Any) -> bool:
    return isinstance(value, dict) and any(isinstance(value.get(k), list) for k in SIDELOADS)


def _load(file: Path) -> Any:
    try:
        raw, _ = read_regular(file, MAX_FILE)
    except ParseError as exc:
        raise TetherError(f"{file}: {exc}") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise TetherError(f"{file}: not JSON ({short(exc)})") from None


def zendesk_folder(path: Path) -> list[tuple[Path, Any]] | None:
    """The pages of a folder of saved Help Center API pages, or None when `path` is not one
    (it holds a file tether reads as a document, or no `.json` holding articles). A `.json`
    beside them that is neither articles nor sections/categories/users is refused."""
    try:
        entries = sorted(p for p in path.iterdir() if p.is_file())
    except OSError:
        return None
    if any(p.suffix.lower() in SUFFIXES for p in entries):
        return None  # a collection folder: its .json files are not documents
    files = [p for p in entries if p.suffix.lower() == ".json"]
    if not files:
        return None
    pages: list[tuple[Path, Any]] = []
    failed: list[TetherError] = []
    for file in files[: MAX_FILES + 1]:
        try:
            pages.append((file, _load(file)))
        except TetherError as exc:  # a collection's own .json (too large, not JSON): not ours
            failed.append(exc)
    if not any(is_articles_page(v) for _, v in pages):
        return None
    if len(files) > MAX_FILES:
        raise TetherError(f"{path}: {len(files):,} .json files, over the {MAX_FILES:,} limit")
    if failed:
        raise failed[0]
    for file, value in pages:
        if not is_articles_page(value) and not _is_sideload_page(value):
            raise TetherError(
                f'{file}: not a Help Center API page (no "articles", "sections",'
                ' "categories" or "users" list) beside the articles pages'
            )
    return pages


def zendesk_file(path: Path) -> list[tuple[Path, Any]]:
    """The one page a `.json` file holds; a `TetherError` when it is not articles."""
    value = _load(path)
    if not is_articles_page(value):
        raise TetherError(
            f'{path}: not a Zendesk Help Center API page (expected {{"articles": [...]}} as'
            " GET /api/v2/help_center/articles.json returns it)"
        )
    return [(path, value)]


class ZendeskSource(ExportSource):
    """Saved Help Center API pages (see the module docstring)."""

    kind: ClassVar[str] = "zendesk"
    label: ClassVar[str] = "Zendesk Guide articles of"

    def __init__(self, path: Path, pages: list[tuple[Path, Any]]) -> None:
        _check_complete(pages)
        self.files = pages
        self.articles = [
            (file, a) for file, page in pages for a in _articles(page) if isinstance(a, dict)
        ]
        self.sideloads: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in SIDELOADS}
        for _, page in pages:
            for key in SIDELOADS:
                entries = page.get(key)
                for entry in entries if isinstance(entries, list) else []:
                    if isinstance(entry, dict) and entry.get("id") is not None:
                        self.sideloads[key][str(entry["id"])] = entry
        hosts = Counter(h for _, a in self.articles if (h := _origin(a)))
        if not hosts:
            raise TetherError(
                f"{path}: no article names its help center (html_url or url); is it a Help"
                " Center API page?"
            )
        super().__init__(path, hosts.most_common(1)[0][0])

    def expected(self) -> int:
        return len(self.articles)

    def pages(self, sink: Sink) -> Iterator[Page]:
        drafts: list[str] = []
        seen: set[str] = set()
        for file, article in self.articles:
            ident, locale = article.get("id"), one_line(article.get("locale")).lower()
            if not isinstance(ident, int | str) or not str(ident).strip().isdigit():
                sink.warning(f"{file}: an article without a numeric id; skipped")
                continue
            ident = str(ident).strip()
            self.scopes.add(locale)
            if article.get("draft") is True:
                drafts.append(ident)
                continue
            source = _url(article, ident, locale)
            if source is None:
                sink.warning(f"{file}: article {ident} has no html_url or url; skipped")
                continue
            if source in seen:
                continue  # the same article on two pages: the first is read
            seen.add(source)
            yield self._page(article, ident, locale, source)
        self.counts["drafts skipped"] = len(drafts)
        self.counts["locales"] = len({s for s in self.scopes if s})
        if drafts:
            shown = ", ".join(drafts[:5]) + (
                f" and {len(drafts) - 5} more" if len(drafts) > 5 else ""
            )
            sink.warning(f"{len(drafts)} draft article(s) skipped, not indexed: {shown}")

    def _page(self, a: Mapping[str, Any], ident: str, locale: str, source: str) -> Page:
        title = one_line(a.get("title") or a.get("name")) or f"Article {ident}"
        body = str(a.get("body") or "")
        original = one_line(a.get("source_locale")).lower()
        row = {
            "doc_id": f"zendesk/{ident}"
            if not original or original == locale
            else f"zendesk/{ident}/{locale}",
            "title": title,
            "version": one_line(a.get("edited_at") or a.get("updated_at") or a.get("created_at")),
        }
        if locale:
            row["language"] = locale
        if "user_segment_id" in a or "user_segment_ids" in a:
            more = a.get("user_segment_ids")
            segments = [a.get("user_segment_id"), *(more if isinstance(more, list) else [more])]
            row["access"] = "staff" if any(s is not None for s in segments) else "public"
        author = self.sideloads["users"].get(str(a.get("author_id")))
        if author and one_line(author.get("name")):
            row["owner"] = one_line(author.get("name"))
        data = html_page(title, body, locale)
        return Page(
            source,
            locale,
            constant(data),
            "html",
            {k: v for k, v in row.items() if v},
            self._trail(a),
            iso_ns(a.get("updated_at") or a.get("edited_at")),
        )

    def _trail(self, a: Mapping[str, Any]) -> tuple[str, ...]:
        """The category and section names above the article, when the pages sideload them."""
        names: list[str] = []
        section = self.sideloads["sections"].get(str(a.get("section_id")))
        seen: set[str] = set()
        while section is not None and str(section.get("id")) not in seen:
            seen.add(str(section.get("id")))
            names.insert(0, one_line(section.get("name")))
            parent, category = section.get("parent_section_id"), section.get("category_id")
            section = self.sideloads["sections"].get(str(parent)) if parent else None
            if section is None and category is not None:
                found = self.sideloads["categories"].get(str(category))
                if found:
                    names.insert(0, one_line(found.get("name")))
        return tuple(n for n in names if n)


def _articles(page: Any) -> list[Any]:
    if not is_articles_page(page):
        return []
    found = page.get("articles")
    return list(found) if isinstance(found, list) else [page["article"]]


def _check_complete(pages: list[tuple[Path, Any]]) -> None:
    """Refuse the incremental export, and a lone page that says more follow."""
    articles = [(f, p) for f, p in pages if is_articles_page(p)]
    for file, page in articles:
        if "end_time" in page:
            raise TetherError(
                f"{file}: an incremental export (only the articles changed since a time, its"
                " end_time); list them all (GET /api/v2/help_center/articles.json)"
            )
    if len(articles) == 1:
        file, page = articles[0]
        meta = page.get("meta") if isinstance(page.get("meta"), dict) else {}
        if page.get("next_page") or meta.get("has_more") is True:
            of = f" of {page['page_count']}" if isinstance(page.get("page_count"), int) else ""
            raise TetherError(
                f"{file}: one page{of} of the articles (more follow: next_page); save every"
                " page into one folder and ingest the folder, or the articles of the other"
                " pages would be removed"
            )


def _origin(a: Mapping[str, Any]) -> str | None:
    for key in ("html_url", "url"):
        value = a.get(key)
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            parts = urlsplit(value)
            if parts.netloc:
                return f"{parts.scheme}://{parts.netloc}"
    return None


def _url(a: Mapping[str, Any], ident: str, locale: str) -> str | None:
    """The article's live URL without its slug (see the module docstring)."""
    html_url = a.get("html_url")
    if isinstance(html_url, str) and html_url.startswith(("http://", "https://")):
        return _SLUG.sub(r"\1", html_url.split("#")[0], count=1)
    origin = _origin(a)
    if origin is None:
        return None
    return f"{origin}/hc/{locale or 'en-us'}/articles/{ident}"
