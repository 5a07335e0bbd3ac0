"""Keeping secrets out of everything the harness writes: results.json, sample logs, logs and error messages.

Keys come from the environment and are never stored, but a user may still put a secret where the harness
records what it ran: `--model_args api_key=...`, `base_url=https://user:secret@host/v1`, or a query string
such as `?api-key=...`. In argument dicts the values of secret-named arguments become "***"; in any text
written anywhere, the password of a URL's userinfo and the values of secret-named query parameters do too.
"""

from __future__ import annotations

import logging
import re
from typing import Any

MASK = "***"
# api_key, hf_token, client_secret, x-api-key, sig ... but not max_new_tokens, api_key_env or request_key's kin
_SECRET_NAME = re.compile(
    r"(?:^|[_\-.])(?:api_?key|apikey|key|token|secret|password|passwd|pwd|auth|authorization|credentials?|"
    r"signature|sig)$",
    re.I,
)
# scheme://user:password@  (the user name is kept, it helps to tell endpoints apart)
_USERINFO = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<user>[^\s/@:?#]*)(?::(?P<pw>[^\s/@?#]*))?@", re.I
)
# ?name=value or &name=value inside a URL
_QUERY_PARAM = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&#\s?;]+)=(?P<value>[^&#\s;]*)")
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.I)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def _redact_url(url: str) -> str:
    def userinfo(m: re.Match[str]) -> str:
        if m.group("pw") is None:  # a lone user part may itself be a token (https://TOKEN@host)
            return f"{m.group('scheme')}{MASK}@" if m.group("user") else m.group(0)
        return f"{m.group('scheme')}{m.group('user')}:{MASK}@"

    def param(m: re.Match[str]) -> str:
        if not is_secret_name(m.group("name")):
            return m.group(0)
        return f"{m.group('sep')}{m.group('name')}={MASK}"

    return _QUERY_PARAM.sub(param, _USERINFO.sub(userinfo, url))


def redact_text(text: str) -> str:
    """`text` with the secrets inside every URL it contains masked."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: _redact_url(m.group(0)), text)


def redact_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments as given on the command line (--model_args, --judge_args), secret-named values masked."""
    return {k: MASK if is_secret_name(k) and v not in (None, "") else redact(v) for k, v in args.items()}


def redact(obj: Any) -> Any:
    """A copy of a JSON-like value with the URL secrets in every string masked."""
    if isinstance(obj, dict):
        return {k: redact(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(redact(v) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


class RedactingFilter(logging.Filter):
    """Masks URL secrets in log records before any handler formats them."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
