"""A JSON request body built once and sent as is, however often the request is retried.

Audio makes up nearly all of a request (base64 WAV: ~430 KB per 10 s clip at 16 kHz, 1.4 MB for a 5-shot
AudioCount prompt). `json.dumps` would scan and copy every one of those characters on every request; here an
`Encoded` value, whose bytes are already valid inside a JSON string (base64 is), is spliced in by reference, and
only the small rest of the document goes through the JSON encoder. The clip's encoding itself is made once per
clip (`AudioClip.wav_base64`), so a demo that recurs at every k costs its bytes once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Encoded:
    """A JSON string value given as bytes that need no escaping (base64, hex, plain ASCII words)."""

    data: bytes


@dataclass(frozen=True, eq=False)
class JsonBody:
    """A JSON document as a few chunks: small encoded pieces and the `Encoded` values between them."""

    chunks: tuple[bytes, ...]

    @classmethod
    def of(cls, document: Any) -> JsonBody:
        return cls(tuple(_chunks(document)))

    @property
    def size(self) -> int:
        return sum(len(c) for c in self.chunks)

    def to_bytes(self) -> bytes:
        """The whole document (one copy, made for the socket)."""
        return b"".join(self.chunks)

    def loads(self) -> Any:
        """The document parsed back, as a server sees it (for tests and debugging)."""
        return json.loads(self.to_bytes())


def _chunks(document: Any) -> Iterator[bytes]:
    pending: list[str] = []
    for piece in _pieces(document):
        if isinstance(piece, str):
            pending.append(piece)
        else:
            yield "".join(pending).encode()
            pending.clear()
            yield piece
    yield "".join(pending).encode()


def _pieces(value: Any) -> Iterator[str | bytes]:
    """The document as text pieces and, for each Encoded value, its bytes (the quotes around it are text)."""
    if isinstance(value, Encoded):
        yield '"'
        yield value.data
        yield '"'
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + json.dumps(str(key)) + ": "
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ", "
            yield from _pieces(item)
        yield "]"
    else:
        yield json.dumps(value)
