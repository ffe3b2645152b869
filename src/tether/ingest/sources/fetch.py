"""The HTTP client of a crawl: one `httpx.Client`, polite and bounded, that never leaves the
start host.

`Fetcher.get(url, etag=..., last_modified=...)` returns a `Fetched`: the final URL, status,
validators and body, or a one-line `problem`. It
- sends tether's User-Agent (`USER_AGENT`: the name robots.txt rules address, and the version)
  and, when given, `If-None-Match` / `If-Modified-Since`, so an unchanged page costs a 304;
- spaces requests (`delay` seconds between the starts of any two, whatever the concurrency:
  the crawl's threads share one clock) and caps connections at `concurrency`;
- follows redirects itself, hop by hop (at most `max_redirects`), and refuses a hop to another
  host (`on_host`) or to a path robots.txt disallows (`allowed`) without requesting it; the
  URLs passed through are recorded (`redirects`);
- retries a connect timeout, a dropped connection, a 429 or a 5xx (`retries` times, waiting
  `backoff` seconds, doubled each time, or the server's `Retry-After` up to 30 s), never a
  TLS error, another 4xx or a page that connected and then stalled past `timeout` (a slow
  page would cost a full timeout per try);
- reads at most `max_bytes` of a body (its `Content-Length` checked first; a compressed body
  is counted as it inflates, so a small gzip bomb cannot fill memory).

Every failure is one line: `timed out after 20 s`, `TLS error: certificate verify
failed: self-signed certificate`, `cannot connect: connection refused`, `HTTP 403 Forbidden`,
`redirected to another host (https://other.example/x); not followed`.

What it cannot do: no cookies kept between requests beyond httpx's, no authentication, no
JavaScript, no HTTP/2; proxies and certificates come from the environment (httpx's
`trust_env`: HTTPS_PROXY, SSL_CERT_FILE).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

import httpx

from tether._version import __version__

USER_AGENT = f"tether/{__version__} (a document indexer; robots.txt token: tether)"
ROBOTS_TOKEN = "tether"  # the product token robots.txt groups are matched against
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class FetchSettings:
    """How a crawl's requests are made (the `tether ingest URL` options)."""

    timeout: float = 20.0  # seconds to connect, and between bytes read
    retries: int = 2  # tries after the first, for timeouts, dropped connections, 429 and 5xx
    backoff: float = 1.0  # seconds before the first retry; doubled for each next one
    delay: float = 0.5  # seconds between the starts of two requests
    concurrency: int = 4  # requests in flight at once
    max_redirects: int = 5
    user_agent: str = USER_AGENT


@dataclass(frozen=True)
class Fetched:
    """One GET, after its redirects and retries."""

    url: str  # as asked
    final: str  # where the response came from
    status: int = 0  # 0: no response (see `problem`)
    content_type: str = ""
    etag: str | None = None
    last_modified: str | None = None
    body: bytes = b""
    redirects: tuple[str, ...] = ()  # the URLs that redirected, in order (the asked one first)
    problem: str | None = None  # why there is no usable response, in one line
    tries: int = 1
    retryable: bool = field(default=False, compare=False)
    retry_after: float | None = field(default=None, compare=False)  # seconds the server asked

    @property
    def modified_ns(self) -> int:
        """`Last-Modified` as nanoseconds since the epoch (0 when absent or unreadable)."""
        if not self.last_modified:
            return 0
        try:
            return int(parsedate_to_datetime(self.last_modified).timestamp() * 1e9)
        except (TypeError, ValueError, IndexError, OverflowError):
            return 0


class Fetcher:
    """GETs on one host (see the module docstring); safe to share between threads."""

    def __init__(
        self,
        settings: FetchSettings,
        *,
        on_host: Callable[[str], bool],
        allowed: Callable[[str], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.on_host = on_host
        self.allowed = allowed or (lambda url: True)
        self.delay = settings.delay
        self.requests = 0
        self.bytes = 0
        self._lock = threading.Lock()
        self._next_at = 0.0
        size = max(1, settings.concurrency)
        self.client = httpx.Client(
            headers={
                "User-Agent": settings.user_agent,
                "Accept": "text/html,application/xhtml+xml,application/pdf,text/markdown,"
                "text/plain;q=0.9,*/*;q=0.5",
            },
            timeout=httpx.Timeout(settings.timeout),
            follow_redirects=False,
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        max_bytes: int = 20_000_000,
    ) -> Fetched:
        """GET `url` (see the module docstring), retrying what may pass."""
        tries = 0
        while True:
            tries += 1
            got = self._once(url, etag, last_modified, max_bytes)
            if not got.retryable or tries > self.settings.retries:
                break
            time.sleep(self._wait(tries, got))
        if tries > 1:
            said = f" ({tries} tries)" if got.problem else ""
            got = _with(got, tries=tries, problem=got.problem and got.problem + said)
        return got

    def _wait(self, tries: int, got: Fetched) -> float:
        wait = self.settings.backoff * 2 ** (tries - 1)
        after = got.retry_after
        return max(wait, min(after, MAX_RETRY_AFTER_S)) if after else wait

    def _throttle(self) -> None:
        """Wait for this request's turn: `delay` seconds after the previous one started."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_at)
            self._next_at = start + self.delay
            self.requests += 1
        if start > now:
            time.sleep(start - now)

    def _once(
        self, url: str, etag: str | None, last_modified: str | None, max_bytes: int
    ) -> Fetched:
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        current, passed = url, []
        while True:
            self._throttle()
            try:
                with self.client.stream("GET", current, headers=headers) as response:
                    status = response.status_code
                    if status in _REDIRECTS and response.headers.get("location"):
                        target = urljoin(current, response.headers["location"].strip())
                        passed.append(current)
                        problem = self._refused_hop(target, len(passed))
                        if problem:
                            return Fetched(
                                url, target, status, redirects=tuple(passed), problem=problem
                            )
                        current = target
                        continue
                    return self._response(url, current, response, tuple(passed), max_bytes)
            except httpx.TimeoutException as exc:
                problem = f"timed out after {self.settings.timeout:g} s"
                # a page that connected and then stalled would cost a full timeout per try
                again = not isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout))
                return Fetched(url, current, problem=problem, retryable=again)
            except httpx.HTTPError as exc:
                problem, again = _transport_problem(exc)
                return Fetched(url, current, problem=problem, retryable=again)
            except (httpx.InvalidURL, ValueError, UnicodeError) as exc:  # a link that lies
                detail = " ".join(str(exc).split()) or type(exc).__name__
                return Fetched(url, current, problem=f"not a URL that can be requested ({detail})")

    def _refused_hop(self, target: str, hops: int) -> str | None:
        if not target.startswith(("http://", "https://")):
            return f"redirected to {target}, which is not http(s); not followed"
        if not self.on_host(target):
            return f"redirected to another host ({target}); not followed"
        if not self.allowed(target):
            return f"redirected to {target}, which robots.txt disallows; not followed"
        if hops > self.settings.max_redirects:
            return f"more than {self.settings.max_redirects} redirects; stopped at {target}"
        return None

    def _response(
        self,
        url: str,
        final: str,
        response: httpx.Response,
        passed: tuple[str, ...],
        max_bytes: int,
    ) -> Fetched:
        status = response.status_code
        head = response.headers
        got = Fetched(
            url,
            final,
            status,
            head.get("content-type", ""),
            head.get("etag"),
            head.get("last-modified"),
            redirects=passed,
        )
        if status in RETRY_STATUSES:
            return _with(
                got,
                problem=f"HTTP {status} {response.reason_phrase}".strip(),
                retryable=True,
                retry_after=_retry_after(head.get("retry-after")),
            )
        if status != 200:
            return got
        declared = head.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            return _with(got, problem=too_large(int(declared), max_bytes))
        body = bytearray()
        try:
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    return _with(got, problem=too_large(len(body), max_bytes, more=True))
        finally:
            with self._lock:
                self.bytes += len(body)
        return _with(got, body=bytes(body))


def _with(got: Fetched, **changes: object) -> Fetched:
    return replace(got, **changes)  # type: ignore[arg-type]


def too_large(size: int, limit: int, more: bool = False) -> str:
    """Why a body is not read: over `limit` bytes (--max-page-bytes); `more`: `size` is what
    was read before stopping, not the whole."""
    shown = f"{limit / 1e6:g} MB" if limit >= 1_000_000 else f"{limit:,} bytes"
    size_said = "more than that" if more else f"{size:,} bytes"
    return f"page is over the {shown} limit ({size_said}; --max-page-bytes)"


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _transport_problem(exc: Exception) -> tuple[str, bool]:
    """(one line, whether to retry) for an exception of httpx's."""
    tls = _tls_error(exc)
    if tls is not None:
        return f"TLS error: {tls}", False
    detail = " ".join(str(exc).split()) or type(exc).__name__
    detail = detail.split("] ", 1)[-1]  # "[Errno 111] Connection refused" -> the words
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {detail[:1].lower() + detail[1:]}", True
    if isinstance(exc, httpx.DecodingError):
        return f"the response cannot be decoded ({detail})", False
    if isinstance(exc, httpx.TransportError):
        return f"the connection failed: {detail[:1].lower() + detail[1:]}", True
    return f"the request failed: {detail}", False


def _tls_error(exc: BaseException) -> str | None:
    """The TLS failure behind `exc` (a certificate that does not verify, a handshake that
    fails), in words; None when it is not one."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {seen.verify_message or seen.reason}"
        if isinstance(seen, ssl.SSLError):
            return str(seen.reason or seen).lower().replace("_", " ")
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "certificate verify failed"
    if "SSL" in text or "TLS" in text:
        return " ".join(text.split())
    return None
