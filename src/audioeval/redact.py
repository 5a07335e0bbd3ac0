"""Keeping secrets out of everything the harness writes: results.json, sample logs, reports, the response
cache, logs and error messages. This module is the one place that decides what is masked; the writers and
loggers apply it (results/outputs.py, the report runner, the response cache, the CLI's log handler and error
lines), never the call sites.

Keys come from the environment and are never stored, but a user may still put a secret where the harness
records what it ran: `--model_args api_key=...` (refused: models/base.py), `api_key_env=sk-...` (refused:
`env_name_problem`), `base_url=https://user:secret@host/v1`, or a query string such as `?api-key=...`. In
argument dicts (`model_args`, `gen_kwargs`, ... wherever they are recorded) the values of secret-named
arguments become "***"; in any text written anywhere, the password of a URL's userinfo (up to its last `@`)
and the values of secret-named query parameters do too; in error and log messages, so do the values of
secret-named `name=value` pairs.

A secret the harness itself holds (an API key read from the environment, the credentials of a URL, the value
of a secret-named generation setting) is registered with `register_secret` where it is read, and from then on
masked wherever it appears, whatever text carries it: a server that quotes the Authorization header back in
its error message cannot put the key in a warning, a sample or stderr.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from typing import Any

MASK = "***"
# api_key, hf_token, client_secret, x-api-key, sig ... but not max_new_tokens, api_key_env or request_key's kin
_SECRET_NAME = re.compile(
    r"(?:^|[_\-.])(?:api_?key|apikey|key|token|secret|password|passwd|pwd|auth|authorization|credentials?|"
    r"signature|sig)$",
    re.I,
)
# scheme://user:password@  (the user name is kept, it helps to tell endpoints apart). The authority ends at the
# first / ? or #, and its userinfo at the LAST @ before that, so a password may hold an @ (as HTTP clients read it)
_USERINFO = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)(?P<user>[^\s/@:?#]*)(?::(?P<pw>[^\s/?#]*))?@", re.I
)
# ?name=value or &name=value inside a URL
_QUERY_PARAM = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&#\s?;]+)=(?P<value>[^&#\s;]*)")
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.I)
# name=value as typed in --model_args and friends (a quoted value, or up to the next comma, space or quote)
_KV = re.compile(r"(?P<name>\b[A-Za-z][\w.\-]*)=(?P<value>'[^']*'|\"[^\"]*\"|[^,\s'\"]+)")
# what an environment variable's name looks like (api_key_env=OPENAI_API_KEY)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# fields under which argument dicts are recorded (results.json, samples, the viewer): secret-named entries masked
ARGUMENT_FIELDS = frozenset({"model_args", "judge_args", "asr_args", "gen_kwargs", "generation_kwargs"})
MIN_SECRET_LENGTH = (
    8  # shorter values would mask ordinary words wherever they occur; no real key is this short
)

_known: set[str] = set()
_known_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def register_secret(value: Any) -> None:
    """Remember a secret this process holds (read where a backend reads it): every later `redact_text`, and so
    every writer and logger, masks it wherever it appears. Values shorter than MIN_SECRET_LENGTH are not kept
    (they are masked where they are recorded as arguments, not in free text)."""
    global _known_pattern
    text = str(value) if value is not None else ""
    if len(text) < MIN_SECRET_LENGTH or text in _known:
        return
    with _lock:
        _known.add(text)
        ordered = sorted(_known, key=len, reverse=True)  # a longer secret that holds a shorter one goes first
        _known_pattern = re.compile("|".join(re.escape(s) for s in ordered))


def register_url_credentials(url: str | None) -> None:
    """The password of a URL's userinfo, and the Basic credentials an HTTP client makes of it, as secrets."""
    if not url or "@" not in url:
        return
    for m in _USERINFO.finditer(url):
        user, password = m.group("user"), m.group("pw")
        if password:
            register_secret(password)
            register_secret(base64.b64encode(f"{user}:{password}".encode()).decode())
        elif user:
            register_secret(user)  # https://TOKEN@host


def register_secret_args(args: dict[str, Any]) -> None:
    """The values of secret-named arguments (`extra_body.user_token=...`) as secrets."""
    for key, value in args.items():
        if is_secret_name(str(key)) and isinstance(value, str | int | float) and not isinstance(value, bool):
            register_secret(value)


def _mask_known(text: str) -> str:
    pattern = _known_pattern
    return pattern.sub(MASK, text) if pattern is not None else text


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
    """`text` with the registered secrets and the secrets inside every URL it contains masked."""
    text = _mask_known(text)
    if "://" not in text:
        return text
    return _URL.sub(lambda m: _redact_url(m.group(0)), text)


def holds_secret(text: str) -> bool:
    """Whether `text` holds a registered secret (what must not be stored, even masked: a response)."""
    pattern = _known_pattern
    return pattern is not None and pattern.search(text) is not None


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
    """A copy of a JSON-like value with the registered and URL secrets in every string masked, and the
    secret-named entries of the argument dicts it records (ARGUMENT_FIELDS) masked whatever their value."""
    if isinstance(obj, dict):
        return {
            k: redact_args(v) if k in ARGUMENT_FIELDS and isinstance(v, dict) else redact(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return type(obj)(redact(v) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


class RedactingFilter(logging.Filter):
    """Masks registered secrets, URL secrets and secret-named `name=value` pairs in log records before any
    handler formats them."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_message(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
