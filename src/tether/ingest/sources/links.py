"""URLs of a crawled site: what is on the start host and under its path, the links, canonical
URL and robots directives of an HTML page, and the format a response is parsed as.

- `normal(url)`: one spelling per page (scheme and host in lower case, the default port and
  the fragment dropped, an empty path made `/`); None for what is not http(s).
- `Scope(start)`: the start URL's host and the path a crawl stays under: the start URL's
  folder (`https://h/guide/` and `https://h/guide/intro.html` give `/guide/`; a last segment
  without a dot, `https://h/guide`, is taken as a folder). `same_host(url)`: the same host
  name and port, or the same host name moving between http and https on their default ports
  (a site that sends http to https stays "the same host").
- `page_links(data, url)`: the `<a href>` and `<area href>` targets of an HTML page (after
  its `<base href>` when that is on the same host), its `<link rel=canonical>` and its
  `<meta name=robots>` noindex / nofollow and its `<meta name=description>`; parsed with lxml, never fetched.
- `format_for(content_type, url)`: the tether format of a response (HTML, PDF, DOCX,
  Markdown, reStructuredText, text), else None; `skippable(url)`: a URL whose suffix names
  a file that is never a document (images, styles, scripts, archives, media), not fetched.
A page's doc_id is made from its URL by `tether.ingest.metadata.path_doc_id`, the rule files
follow (`https://h/guide/setup/intro.html` is `guide/setup/intro`).

What it cannot do: no JavaScript (links a script adds are not seen), no percent-encoding
normalisation beyond what `urllib.parse` does (`%7E` and `~` are two URLs), and query strings
are kept as they are (a site that adds session ids to links is crawled until a cap stops it).
"""

from __future__ import annotations

import mimetypes
import posixpath
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from tether.ingest.parse.formats import SUFFIXES
from tether.types import FileFormat

_DEFAULT_PORTS = {"http": 80, "https": 443}

_CONTENT_TYPES: dict[str, FileFormat] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/x-rst": "rst",
    "text/prs.fallenstein.rst": "rst",
    "text/plain": "text",
}
# types served for anything (a file server that knows no better): the URL's suffix decides
_GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "text/plain"})
_NEVER_DOCUMENTS = frozenset(
    {
        "text/css",
        "text/javascript",
        "application/javascript",
        "application/json",
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "application/x-bzip2",
        "application/x-xz",
        "application/x-7z-compressed",
        "application/vnd.rar",
        "application/x-rar-compressed",
        "application/wasm",
        "application/x-shockwave-flash",
        "application/vnd.ms-fontobject",
        "application/x-font-ttf",
        "application/font-woff",
        "application/octet-stream",
        "application/x-msdownload",
        "application/java-archive",
    }
)


def normal(url: str) -> str | None:
    """`url` in one spelling (see the module docstring); None when it is not http(s) or has
    no host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _port(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme, 0)


def same_host(a: str, b: str) -> bool:
    """Whether `a` and `b` are on one host (see the module docstring)."""
    try:
        sa, ha, pa = _port(a)
        sb, hb, pb = _port(b)
    except ValueError:
        return False
    if not ha or ha != hb:
        return False
    if (sa, pa) == (sb, pb):
        return True
    return pa == _DEFAULT_PORTS.get(sa) and pb == _DEFAULT_PORTS.get(sb)


def origin(url: str) -> str:
    """`scheme://host[:port]` of `url`."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


@dataclass(frozen=True)
class Scope:
    """The host and path a crawl from `start` (a normal URL) stays within."""

    start: str
    prefix: str = field(init=False)

    def __post_init__(self) -> None:
        path = urlsplit(self.start).path or "/"
        if not path.endswith("/"):
            head, _, last = path.rpartition("/")
            path = f"{path}/" if "." not in last else f"{head}/"
        object.__setattr__(self, "prefix", path)

    def on_host(self, url: str) -> bool:
        return same_host(self.start, url)

    def within(self, url: str) -> bool:
        """On the start host and under the start path (the start URL itself included)."""
        if not self.on_host(url):
            return False
        path = urlsplit(url).path or "/"
        return path.startswith(self.prefix) or path + "/" == self.prefix or url == self.start

    @property
    def folder(self) -> str:
        """The URL of the scope's folder (`https://h/guide/`)."""
        return urljoin(origin(self.start), self.prefix)


@dataclass(frozen=True)
class PageLinks:
    """What an HTML page says about where to go next."""

    links: tuple[str, ...] = ()  # absolute, normal, fragment-free, in page order, once each
    canonical: str | None = None  # absolute and normal, on any host (the caller checks)
    noindex: bool = False
    nofollow: bool = False
    description: str | None = None  # <meta name=description>


def page_links(data: bytes, url: str) -> PageLinks:
    """The links of the HTML page `data` served at `url` (see the module docstring); an
    unreadable page has none."""
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(huge_tree=True))
    except (lxml.etree.LxmlError, ValueError, TypeError):  # the parse reports the page itself
        return PageLinks()
    base = url
    for el in root.iter("base"):
        href = el.get("href")
        if href:
            candidate = normal(urljoin(url, href.strip()))
            if candidate is not None and same_host(url, candidate):
                base = candidate
        break
    canonical = description = None
    noindex = nofollow = False
    for el in root.iter("link", "meta"):
        if el.tag == "link" and canonical is None:
            rels = (el.get("rel") or "").lower().split()
            href = el.get("href")
            if "canonical" in rels and href:
                canonical = normal(urljoin(base, href.strip()))
        elif el.tag == "meta":
            name = (el.get("name") or "").strip().lower()
            content = el.get("content") or ""
            if name in ("robots", "tether"):
                words = {w.strip() for w in content.lower().split(",")}
                noindex |= bool(words & {"noindex", "none"})
                nofollow |= bool(words & {"nofollow", "none"})
            elif name == "description" and description is None and content.strip():
                description = " ".join(content.split())[:500]
    found: dict[str, None] = {}
    for el in root.iter("a", "area"):
        href = el.get("href")
        if not href or "nofollow" in (el.get("rel") or "").lower().split():
            continue
        target = normal(urljoin(base, href.strip()))
        if target is not None:
            found.setdefault(target, None)
    return PageLinks(tuple(found), canonical, noindex, nofollow, description)


def _suffix_format(url: str) -> FileFormat | None:
    path = unquote(urlsplit(url).path)
    return SUFFIXES.get(posixpath.splitext(path)[1].lower())


def format_for(content_type: str, url: str) -> FileFormat | None:
    """The format a response is parsed as: its media type's (`text/html; charset=...` is
    HTML), or for a generic type (none, `application/octet-stream`, `text/plain`) its URL's
    suffix (`.md` served as text/plain is Markdown); None when tether does not read it."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _GENERIC_TYPES:
        by_suffix = _suffix_format(url)
        if by_suffix is not None:
            return by_suffix
    return _CONTENT_TYPES.get(media)


def media_type(content_type: str) -> str:
    """`text/html` of `text/html; charset=utf-8`; "(no type)" when there is none."""
    return content_type.split(";", 1)[0].strip().lower() or "(no type)"


def skippable(url: str) -> bool:
    """Whether the URL's suffix names a file that is never a document (an image, a style
    sheet, a script, an archive, audio or video, a font): such links are not fetched."""
    path = unquote(urlsplit(url).path)
    suffix = posixpath.splitext(path)[1].lower()
    if not suffix or suffix in SUFFIXES:
        return False
    guessed, compressed = mimetypes.guess_type(f"x{suffix}", strict=False)
    if compressed is not None:  # .gz, .bz2, .xz: an archive
        return True
    if guessed is None:
        return suffix in (".woff", ".woff2", ".ttf", ".otf", ".map", ".ico", ".webp")
    major = guessed.split("/", 1)[0]
    return major in ("image", "audio", "video", "font") or guessed in _NEVER_DOCUMENTS
