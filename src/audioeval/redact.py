"""Keeping secrets out of everything the harness writes: results.json, sample logs, logs and error messages.

Keys come from the environment and are never stored, but a user may still put a secret where the harness
records what it ran: `--model_args api_key=...` (refused: models/base.py), `api_key_env=sk-...` (refused:
`env_name_problem`), `base_url=https://user:secret@host/v1`, or a query string such as `?api-key=...`. In
argument dicts the values of secret-named arguments become "***"; in any text written anywhere, the password
of a URL's userinfo and the values of secret-named query parameters do too; in error and log messages, so do
the values of secret-named `name=value` pairs.
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
# name=value as typed in --model_args and friends (a quoted value, or up to the next comma, space or quote)
_KV = re.compile(r"(?P<name>\b[A-Za-z][\w.\-]*)=(?P<value>'[^']*'|\"[^\"]*\"|[^,\s'\"]+)")
# what an environment variable's name looks like (api_key_env=OPENAI_API_KEY)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def redact_message(text: str) -> str:
    """An error or log message with URL secrets and the values of secret-named `name=value` pairs masked
    (a message may quote a whole --model_args string). Not for samples: a model's answer may say `key=C`."""

    def pair(m: re.Match[str]) -> str:
        return f"{m.group('name')}={MASK}" if is_secret_name(m.group("name")) else m.group(0)

    return _KV.sub(pair, redact_text(text))


def env_name_problem(value: Any) -> str | None:
    """Why `value` cannot be the name of an environment variable holding a key (None when it can). A key
    pasted where the variable's name goes (api_key_env=sk-...) is the usual cause; the message never
    repeats the value."""
    text = str(value)
    if not _ENV_NAME.fullmatch(text):
        return "is not the name of an environment variable (letters, digits and _ only)"
    mixed = (
        any(c.islower() for c in text) and any(c.isupper() for c in text) and any(c.isdigit() for c in text)
    )
    if len(text) >= 32 and mixed:
        return "looks like a key rather than the name of an environment variable"
    return None


def env_name_refusal(flag: str, key: str, problem: str) -> str:
    """The one line refusing `key`=VALUE where VALUE cannot name an environment variable (`problem`, from
    `env_name_problem`); it never repeats the value."""
    return (
        f"{flag}{key}: the value given {problem}. {key} names the environment variable that holds the key "
        f"({key}=OPENAI_API_KEY): put your key in a variable such as MY_KEY and pass {key}=MY_KEY."
    )


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
        cleaned = redact_message(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
