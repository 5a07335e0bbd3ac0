"""An asynchronous client for one OpenAI-compatible Chat Completions endpoint, shared by the `openai` model
backend and the LLM judges.

Retries, the Retry-After cap, the adaptive concurrency and endpoint-down detection are the endpoint policy's
(policy.py), the same for every endpoint the harness calls; this client sends a body (http.py), classifies
what went wrong (`http_problem`: the status, a timeout, a dropped connection, a reply that is not a chat
completion) and hands the reply to the caller's `parse`. (The `openai` SDK's retry loop could not do this job:
its Retry-After ceiling is a module constant, a longer Retry-After makes it give up instead of waiting the
ceiling, and neither the concurrency controller nor the per-endpoint figures would hear about the attempts it
retries. http.py says why requests do not go through the SDK at all.)

Each request's body is built once by the caller (body.py) and sent as is on every attempt. The API key is read
from an environment variable and never stored in anything the harness writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from audioeval.errors import ModelError
from audioeval.models.api.body import JsonBody
from audioeval.models.api.http import (
    HttpEndpoint,
    HttpStatusError,
    MalformedReply,
    endpoint_url_and_headers,
    error_message,
    http_problem,
)
from audioeval.models.api.policy import EndpointDown, EndpointPolicy, EndpointSettings, Outcome, Problem
from audioeval.models.endpoint_stats import EndpointStats

__all__ = ["ChatClient", "EndpointDown", "EndpointSettings", "error_message"]

T = TypeVar("T")


class ChatClient:
    def __init__(self, settings: EndpointSettings, stats: EndpointStats | None = None) -> None:
        self.settings = settings
        self.stats = stats if stats is not None else EndpointStats()
        self.policy = EndpointPolicy(settings, self.stats)
        url, headers = endpoint_url_and_headers(settings.api_key(), settings.base_url, "chat/completions")
        assert settings.max_concurrent is not None  # set by EndpointSettings.__post_init__
        self.http = HttpEndpoint(url, headers, settings.max_concurrent, settings.timeout)

    async def aclose(self) -> None:
        """Close the connection pool of the running loop (call before the loop ends)."""
        await self.http.aclose()

    async def complete(self, body: JsonBody, parse: Callable[[Any], T]) -> Outcome[T]:
        """Send one request body under the endpoint policy; `parse` turns the reply's JSON into the value
        (raising ValueError for a reply that is not one: retried as a malformed reply). Raises EndpointDown
        when the endpoint has failed too many requests in a row, ModelError when it rejects the API key."""
        return await self.policy.call(lambda: self._attempt(body, parse), self._classify)

    async def _attempt(self, body: JsonBody, parse: Callable[[Any], T]) -> T:
        reply = await self.http.post(body)
        if reply.status == 401:
            raise ModelError(
                f"{self.settings.label} rejected the API key from ${self.settings.api_key_env} (HTTP 401): check it."
            )
        if reply.status >= 400:
            raise HttpStatusError(reply)
        try:
            return parse(json.loads(reply.data))
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors too
            raise MalformedReply(str(err)) from err

    def _classify(self, err: Exception) -> Problem | None:
        return http_problem(err, self.settings.timeout)
