"""The collector's HTTP client for Pulsar's admin REST API, treating the API as untrusted input.

* Response shapes as Pulsar 4.x really sends them: JSON documents; plain-text bodies declared as JSON (a
  ``String`` resource such as ``.../antiAffinity`` answers ``aa-1`` unquoted); ``204 No Content`` for a policy
  that is not set; ``404`` with a JSON ``reason`` for something that does not exist.
* Bounded: every response at most ``max_bytes`` (read in chunks, never whole; parsed only if its values fit
  ``PARSE_BUDGET`` times that in memory) and ``deadline`` seconds of wall
  time from the connection to the last byte, status line and headers included (a server dripping one byte per
  second cannot hold a request open), a few retries on 5xx and network errors, none on 4xx.
* Broken HTTP (a garbage status line, too many or too long headers, a malformed chunked body) and JSON that is
  not JSON (``NaN``, ``Infinity``: Jackson writes them as strings) are failures of that request, with the reason,
  never a traceback that loses the snapshot.
* The token goes only to the origin it was given for: a redirect to another scheme, host or port is followed
  without it.
* Names that come back from the API (cluster, tenants, namespaces, broker ids) are checked with Pulsar's own
  rules before they are used in a URL or a file path (:mod:`lb_pipeline.model.names`).
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from lb_pipeline.errors import LbError

DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # a broker-stats topics document of a very large broker fits
# Parsed JSON costs Python ~100 bytes per value at worst (a 20 MB array of small numbers had peaked at 933 MB):
# a document is parsed only if that stays within PARSE_BUDGET times the response cap. Pulsar's documents carry
# ~20 bytes of text per value, so any of them under the cap passes.
BYTES_PER_VALUE, PARSE_BUDGET = 100, 8


class RequestFailed(Exception):
    pass


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, dropping the Authorization header whenever the origin changes."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            new.clock = getattr(req, "clock", None)  # one budget for the request and its redirects
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.headers.pop("Authorization", None)
            new.unredirected_hdrs.pop("Authorization", None)
        return new


class _Clock:
    """One request's wall-time budget: when it runs out, the connection's socket is shut down, which ends a
    status line or headers dripped byte by byte (each byte within the socket timeout, so it alone never fires)."""

    def __init__(self, seconds: float):
        self.seconds, self.at, self.expired = seconds, time.monotonic() + seconds, False

    def left(self) -> float:
        return self.at - time.monotonic()


def _timed(base: type) -> type:
    class Timed(base):
        clock: _Clock | None = None
        _timer = None

        def connect(self):
            super().connect()
            if self.clock is not None:
                self._timer = threading.Timer(max(0.0, self.clock.left()), self._expire)
                self._timer.daemon = True
                self._timer.start()

        def _expire(self):
            self.clock.expired = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass

        def getresponse(self):  # headers read: the body's reads check the clock themselves (``_read``)
            try:
                return super().getresponse()
            finally:
                if self._timer is not None:
                    self._timer.cancel()

    Timed.__name__ = f"Timed{base.__name__}"
    return Timed


_HTTP, _HTTPS = _timed(http.client.HTTPConnection), _timed(http.client.HTTPSConnection)


def _with_clock(cls: type, req):
    def connection(host, **kw):
        conn = cls(host, **kw)
        conn.clock = getattr(req, "clock", None)
        return conn
    return connection


class _TimedHTTP(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_with_clock(_HTTP, req), req)


class _TimedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext):
        super().__init__(context=context)
        self.tls = context

    def https_open(self, req):
        return self.do_open(_with_clock(_HTTPS, req), req, context=self.tls)


def _not_finite(token: str):
    raise ValueError(f"a non-finite number {token} (JSON has none)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a number beyond a double's range ({text[:40]})")
    return value


def _origin(url: str) -> tuple:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme)


@dataclass
class AdminClient:
    admin_url: str
    token: str | None = None
    timeout: float = 10.0  # per socket operation
    retries: int = 2
    ca_file: str | None = None
    insecure: bool = False
    broker_url_template: str | None = None  # e.g. "https://{host}:8443"; default: admin URL's scheme + broker id
    max_bytes: int = DEFAULT_MAX_BYTES
    deadline: float | None = None  # wall time per request; default: 3 × timeout
    log: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if urllib.parse.urlsplit(self.admin_url).scheme not in ("http", "https"):
            raise LbError(f"--admin-url must be an http:// or https:// URL, got {self.admin_url!r}")
        ctx = ssl.create_default_context(cafile=self.ca_file) if self.admin_url.startswith("https") else None
        if ctx is not None and self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        handlers = [_SameOriginRedirects(), _TimedHTTP()] + ([_TimedHTTPS(ctx)] if ctx is not None else [])
        self._opener = urllib.request.build_opener(*handlers)

    def broker_url(self, broker: str) -> str:
        host, _, port = broker.rpartition(":")
        if self.broker_url_template:
            return self.broker_url_template.format(host=host, port=port, broker=broker)
        scheme = urllib.parse.urlsplit(self.admin_url).scheme or "http"
        return f"{scheme}://{broker}"

    def get(self, path: str, base: str | None = None, allow_missing: bool = False):
        """A JSON document; ``None`` for an empty body, 204, or (with ``allow_missing``) 404."""
        body = self._get(path, base, allow_missing)
        if body is None or not body.strip():
            return None
        values = body.count(b",") + body.count(b"[") + body.count(b"{") + 1
        if values * BYTES_PER_VALUE > PARSE_BUDGET * self.max_bytes:
            raise RequestFailed(f"GET {path}: {values} values in {len(body)} bytes would take about "
                                f"{values * BYTES_PER_VALUE >> 20} MiB to parse, more than {PARSE_BUDGET} × "
                                "--max-response-bytes: not parsed")
        try:
            return json.loads(body, parse_constant=_not_finite, parse_float=_finite)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            why = getattr(exc, "msg", None) or str(exc) or "nested too deeply"
            raise RequestFailed(f"GET {path}: response is not valid JSON ({why})") from None

    def get_text(self, path: str, base: str | None = None, allow_missing: bool = False) -> str | None:
        """A plain value Pulsar returns as text (``String`` resources): the body, or its JSON string if quoted."""
        body = self._get(path, base, allow_missing)
        if body is None:
            return None
        text = body.decode("utf-8", errors="strict").strip()
        if text.startswith('"'):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise RequestFailed(f"GET {path}: response is neither text nor a JSON string") from None
            return value if isinstance(value, str) else None
        return text or None

    def _get(self, path: str, base: str | None, allow_missing: bool) -> bytes | None:
        url = (base or self.admin_url).rstrip("/") + path
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        last, limit = "", self.deadline if self.deadline is not None else 3 * self.timeout
        for attempt in range(self.retries + 1):
            clock = _Clock(limit)
            try:
                req = urllib.request.Request(url, headers=headers)
                req.clock = clock
                with self._opener.open(req, timeout=self.timeout) as resp:
                    if resp.status == 204:
                        return None
                    return self._read(resp, path, clock)
            except urllib.error.HTTPError as exc:
                if exc.code == 404 and allow_missing:
                    return None
                last = f"HTTP {exc.code}" + _reason(exc)
                if exc.code < 500:
                    break
            except RequestFailed:
                raise
            except (urllib.error.URLError, TimeoutError, OSError, ValueError, http.client.HTTPException) as exc:
                # broken HTTP too: a garbage status line, over 100 headers, a header line over 64 kB, a bad chunk
                last = f"{type(exc).__name__}: {exc}" if isinstance(exc, http.client.HTTPException) else (
                    type(exc).__name__ if not str(exc) else str(getattr(exc, "reason", exc)))
                last = " ".join(last.split())[:200]
                if clock.expired:
                    raise RequestFailed(f"GET {path}: the response took longer than {limit:g} s "
                                        "(its status line and headers)") from None
            if attempt < self.retries:
                time.sleep(0.2 * (attempt + 1))
        raise RequestFailed(f"GET {path} from {base or self.admin_url}: {last}")

    def _read(self, resp, path: str, clock: _Clock) -> bytes:
        chunks, size = [], 0
        while True:
            if clock.left() < 0 or clock.expired:  # expired: cut off while its headers came (they end at EOF)
                raise RequestFailed(f"GET {path}: the response took longer than {clock.seconds:g} s"
                                    + (" (its status line and headers)" if clock.expired else ""))
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self.max_bytes:
                raise RequestFailed(f"GET {path}: response larger than {self.max_bytes} bytes (--max-response-bytes)")
            chunks.append(chunk)


def _reason(exc: urllib.error.HTTPError) -> str:
    """Pulsar's error bodies are ``{"reason": "..."}``; keep a short, single-line excerpt."""
    try:
        body = exc.read(4096).decode("utf-8", errors="replace")
        reason = json.loads(body).get("reason", "") if body.lstrip().startswith("{") else body
    except Exception:  # noqa: BLE001 - the status code alone is still a useful message
        return ""
    reason = " ".join(str(reason).split())[:200]
    return f" ({reason})" if reason else ""
