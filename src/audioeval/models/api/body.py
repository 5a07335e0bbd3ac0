"""A JSON request body built once and sent as is, however often the request is retried.

Audio makes up nearly all of a request (base64 WAV: ~430 KB per 10 s clip at 16 kHz, 1.4 MB for a 5-shot
AudioCount prompt). `json.dumps` would scan and copy every one of those characters on every request; here an
`Encoded` value, whose bytes are already valid inside a JSON string (base64 is), is spliced in by reference, and
only the small rest of the document goes through the JSON encoder. The clip's encoding itself is made once per
clip (`AudioClip.wav_base64`), so a demo that recurs at every k costs its bytes once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quote  # what json.dumps does to a str, in C
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


# stands in for each Encoded value while the rest of the document goes through json.dumps in one call; a
# document whose own text holds it (as json.dumps writes it) is split the slow way instead
_MARK = "\x00audioeval:encoded\x00"
_MARK_JSON = json.dumps(_MARK)


def _chunks(document: Any) -> list[bytes]:
    """The document's text pieces joined between the Encoded values, which stay separate chunks."""
    values: list[Encoded] = []

    def mark(value: Any) -> str:
        if isinstance(value, Encoded):
            values.append(value)
            return _MARK
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    pieces = json.dumps(document, default=mark).split(_MARK_JSON)
    if len(pieces) != len(values) + 1:  # the mark occurs in the document's own text
        return _walked_chunks(document)
    if not values:
        return [pieces[0].encode()]
    # the text before, between and after the values, each value's quotes on its side
    texts = [pieces[0] + '"', *('"' + p + '"' for p in pieces[1:-1]), '"' + pieces[-1]]
    chunks = [texts[0].encode()]
    for value, text in zip(values, texts[1:], strict=True):
        chunks += [value.data, text.encode()]
    return chunks


def _walked_chunks(document: Any) -> list[bytes]:
    """The same chunks, the document walked in Python."""
    chunks: list[bytes] = []
    text: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            text.append(_quote(value))
        elif isinstance(value, Encoded):
            text.append('"')
            chunks.append("".join(text).encode())
            chunks.append(value.data)
            text.clear()
            text.append('"')
        elif isinstance(value, dict):
            text.append("{")
            for i, (key, item) in enumerate(value.items()):
                text.append((", " if i else "") + _quote(str(key)) + ": ")
                walk(item)
            text.append("}")
        elif isinstance(value, list | tuple):
            text.append("[")
            for i, item in enumerate(value):
                if i:
                    text.append(", ")
                walk(item)
            text.append("]")
        else:  # numbers, booleans, None: as json.dumps writes them
            text.append(json.dumps(value))

    walk(document)
    chunks.append("".join(text).encode())
    return chunks
