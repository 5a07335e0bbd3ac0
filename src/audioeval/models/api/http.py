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
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from audioeval.models.api.body import JsonBody

USER_AGENT = "audioeval"


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Any  # case-insensitive mapping
    data: bytes


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
        """One attempt. Raises TimeoutError past the timeout, aiohttp.ClientError when the connection fails."""
        from audioeval.models.api.payload import ChunksPayload

        session = self._current()
        async with session.post(self.url, data=ChunksPayload(body), proxy=self._proxy) as response:
            data = await response.read()
            return HttpReply(response.status, response.headers, data)

    async def aclose(self) -> None:
        """Close the pool of the running loop (call before the loop ends)."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            session, self._session, self._loop = self._session, None, None
            await session.close()
