"""A JsonBody as an aiohttp payload that hands its chunks to the socket one by one.

Given one bytes object instead, a body is joined once by us and once more by aiohttp (which coalesces it
with the headers) before the kernel copies it: three passes over every megabyte instead of one. Imported
only when a request is sent, like aiohttp itself."""

from __future__ import annotations

from typing import Any

from aiohttp.payload import Payload

from audioeval.models.api.body import JsonBody


class ChunksPayload(Payload):
    _autoclose = True  # nothing to close, and it can be written again (after a redirect)

    def __init__(self, body: JsonBody) -> None:
        super().__init__(body.chunks, content_type="application/json")
        self._size = self._length = body.size

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._value).decode(encoding, errors)

    async def write(self, writer: Any) -> None:
        for chunk in self._value:
            await writer.write(chunk)

    async def write_with_length(self, writer: Any, content_length: int | None) -> None:
        if content_length is None or content_length >= self._length:
            await self.write(writer)
            return
        for chunk in self._value:
            if content_length <= 0:
                break
            await writer.write(chunk[:content_length])
            content_length -= len(chunk)
