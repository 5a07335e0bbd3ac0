"""The HTTP side of one endpoint: where requests go, with which headers, over a pool of kept-alive connections.

Requests go through aiohttp, not the `openai` SDK's `chat.completions.create`: on AudioCount payloads
(1.3 MB, three clips) against a server in another process, 32 in flight, the SDK costs 6.3 ms of client CPU
per request (it re-serializes the payload with `json.dumps`, scanning every base64 character, then runs its
httpx2 machinery), httpx2 given ready bytes 1.6 ms, aiohttp given ready bytes 0.6 ms (bench/bench_api_concurrency.py
measures the same per stage). What the SDK is good at stays with it: the endpoint's base URL
(`OPENAI_BASE_URL` when none is given) and the auth headers (the key, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`),
read once per client. The pool holds as many connections as requests may be in flight, so no request
waits for a connection and none is closed and reopened between requests.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from audioeval.errors import ModelError
from audioeval.models.api.body import JsonBody
from audioeval.models.api.policy import Problem
from audioeval.types import FailureKind

USER_AGENT = "audioeval"
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
OVERLOAD_STATUS = {429, 503}  # with timeouts: the signals that lower the concurrency limit
REFUSED_STATUS = {
    400,
    413,
    422,
}  # the server refused this request (too many clips, too long): its fault alone
# The most a reply may hold once decompressed (a spoken answer of 10 minutes is about 38 MB of base64 WAV): a
# server sending more (a gzip bomb, an endless answer) is a counted failure, and memory stays bounded.
MAX_REPLY_BYTES = 64 * 2**20


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Any  # case-insensitive mapping
    data: bytes


class HttpStatusError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, reply: HttpReply) -> None:
        super().__init__(f"HTTP {reply.status}")
        self.status = reply.status
        self.message = error_message(reply.data)
        self.headers = reply.headers


class MalformedReply(Exception):
    """A reply that is not what was asked for (not JSON, not a chat completion, bad audio)."""


class ReplyTooLarge(Exception):
    """A reply over MAX_REPLY_BYTES once decompressed."""


def status_kind(status: int) -> FailureKind:
    """The kind of failure an HTTP error status is."""
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server"
    if status in REFUSED_STATUS:
        return "refused"
    return "http"


def http_problem(err: Exception, timeout: float) -> Problem | None:
    """What an HTTP attempt's exception means for the retry policy; None for errors that are not the
    endpoint's (a rejected key is a ModelError that stops the run; a bug is re-raised)."""
    import aiohttp

    if isinstance(err, ModelError):
        return None
    if isinstance(err, TimeoutError):  # before ClientError: aiohttp's timeouts are both
        return Problem("timeout", "APITimeoutError", f"no reply within {timeout:g} s", True, overloaded=True)
    if isinstance(err, HttpStatusError):
        s = err.status
        return Problem(
            status_kind(s),
            f"HTTP {s}",
            short(err.message),
            retryable=s in RETRYABLE_STATUS,
            overloaded=s in OVERLOAD_STATUS,
            retry_after=parse_retry_after(err.headers),
            status=s,
        )
    if isinstance(err, ReplyTooLarge):  # asking again brings the same flood
        return Problem("limit", "reply too large", str(err), retryable=False)
    if isinstance(err, aiohttp.ClientError | ConnectionError):
        return Problem("connection", "APIConnectionError", short(str(err) or type(err).__name__), True)
    if isinstance(err, MalformedReply):  # an HTML page, broken JSON, no choices, bad audio
        return Problem("malformed", "malformed reply", short(str(err)), True)
    return None


def error_message(data: bytes) -> str:
    """The message of an error reply: OpenAI's `error.message`, vLLM's `message`, FastAPI's `detail`, else
    the reply's text."""
    text = data.decode("utf-8", "replace")
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    if isinstance(reply, dict):
        error = reply.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            if reply.get(key):
                return str(reply[key])
    return text


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from retry-after-ms, or Retry-After as seconds or an HTTP date; None when absent."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


async def read_capped(response: Any, limit: int | None = None) -> bytes:
    """An aiohttp response's body, decompressed, refused once it passes `limit` bytes (MAX_REPLY_BYTES)."""
    limit = MAX_REPLY_BYTES if limit is None else limit
    declared = response.content_length
    if declared is not None and declared > limit and not response.headers.get("Content-Encoding"):
        raise ReplyTooLarge(f"the reply declares {declared:,} bytes; at most {limit:,} are read")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(2**20):
        size += len(chunk)
        if size > limit:
            raise ReplyTooLarge(
                f"the reply holds more than {limit:,} bytes (decompressed); the rest was not read"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def endpoint_url_and_headers(api_key: str, base_url: str | None, path: str) -> tuple[str, dict[str, str]]:
    """The URL of `path` under the endpoint and the headers every request carries, as the SDK resolves them
    (without the SDK's own telemetry headers: these requests are not the SDK's). A query string in the base URL
    (`?api-version=...`) is kept, and so are credentials in it."""
    from openai import AsyncOpenAI

    sdk = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)
    base = urlsplit(base_url or str(sdk.base_url))
    url = urlunsplit(base._replace(path=base.path.rstrip("/") + "/" + path.lstrip("/")))
    headers = {
        name: value
        for name, value in {**sdk.default_headers, **sdk.auth_headers}.items()
        if isinstance(value, str) and not name.lower().startswith("x-stainless")
    }
    headers["User-Agent"] = USER_AGENT
    headers["Content-Type"] = "application/json"
    if base.username is not None or base.password is not None:
        # credentials in the URL (http://user:password@host/v1) are sent as Basic auth in place of the key, as
        # the SDK's httpx sent them; aiohttp refuses both at once
        headers.pop("Authorization", None)
    return url, headers


def env_proxy(url: str) -> str | None:
    """The proxy for `url` from HTTP_PROXY / HTTPS_PROXY / NO_PROXY (as the SDK's httpx honours them)."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class HttpEndpoint:
    """POSTs to one URL. A connection pool belongs to one event loop (the evaluator runs one per task), so the
    session is made for the running loop and remade when the loop changes."""

    def __init__(self, url: str, headers: dict[str, str], connections: int, timeout: float) -> None:
        self.url = url
        self._headers = headers
        self._connections = max(1, connections)
        self._timeout = timeout
        self._proxy = env_proxy(url)
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _current(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            import aiohttp

            # trust_env=False: with it, aiohttp looks up ~/.netrc and the proxy settings on a worker thread
            # for every request (two thread hops each); the proxy is looked up once instead (env_proxy)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connections, limit_per_host=0),
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                trust_env=False,
            )
            self._loop = loop
        return self._session

    async def post(self, body: JsonBody) -> HttpReply:
        """One attempt. Raises TimeoutError past the timeout, aiohttp.ClientError when the connection fails,
        ReplyTooLarge for a reply over MAX_REPLY_BYTES."""
        from audioeval.models.api.payload import ChunksPayload

        session = self._current()
        async with session.post(self.url, data=ChunksPayload(body), proxy=self._proxy) as response:
            data = await read_capped(response)
            return HttpReply(response.status, response.headers, data)

    async def aclose(self) -> None:
        """Close the pool of the running loop (call before the loop ends)."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            session, self._session, self._loop = self._session, None, None
            await session.close()
