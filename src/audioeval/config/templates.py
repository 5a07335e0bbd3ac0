"""Rendering a task's Jinja templates into a Conversation of text and ordered audio parts.

Templates run in an ImmutableSandboxedEnvironment with StrictUndefined, over a read-only copy of the episode
(`template_view`) in which every audio clip is an opaque `ClipHandle`: a template can read a clip's facts
(seconds, sampling rate; its label and role sit beside it) but never its samples, and cannot change or write
anything. Audio is placed with `{{ audio(clip) }}`, message boundaries in a whole-prompt template with
`{{ turn("user") }}`. Every clip the episode offers for the chosen k (context clips, the first k demos, the
query) must be placed exactly once, or explicitly skipped with `{{ skip_audio(clip) }}`; anything else is an
error naming the template file and line.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any, cast

import jinja2
import numpy as np
from jinja2.bccache import Bucket, BytecodeCache
from jinja2.sandbox import ImmutableSandboxedEnvironment

from audioeval.config.task import TaskConfig, read_text_file
from audioeval.config.template_bounds import (
    BoundedSandbox,
    TemplateBoundError,
    evaluate_bounded,
    render_bounded,
)
from audioeval.errors import ConfigError
from audioeval.types import AudioClip, AudioPart, Message, Role, TextPart, UnrenderedClip

_RAW_PLACEHOLDERS = re.compile(
    r"<audio>|<\|AUDIO\|>|<\|audio_bos\|>|<\|audio_pad\|>|<\|audio_start\|>|<audio_soft_token>|<\|audio_\d+\|>",
    flags=re.IGNORECASE,
)
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True, eq=False)
class ClipHandle:
    """What a template sees of an audio clip: read-only facts, never the samples. `audio(handle)` and
    `skip_audio(handle)` map it back to the clip through the render's own table."""

    seconds: float
    sampling_rate: int

    def __str__(self) -> str:
        return f"<audio {self.seconds:.2f} s>"


_PLAIN = (str, int, float, bool, type(None))


def template_view(obj: Any, handles: dict[int, AudioClip] | None = None, where: str = "episode") -> Any:
    """A copy of `obj` made of plain values only (dicts, lists, strings, numbers), with each AudioClip replaced
    by a ClipHandle registered in `handles` (id(handle) -> clip; the same clip always gets the same handle).
    numpy values become plain numbers and lists; any other object is an error naming its field."""
    handles = {} if handles is None else handles
    memo: dict[int, ClipHandle] = {}

    def convert(value: Any, path: str) -> Any:
        if isinstance(value, _PLAIN):
            return value
        if isinstance(value, AudioClip):
            handle = memo.get(id(value))
            if handle is None:
                # an episode outline's clip has no length (what a study renders reads labels, not lengths)
                seconds = math.nan if isinstance(value, UnrenderedClip) else round(value.seconds, 6)
                handle = memo[id(value)] = ClipHandle(seconds, value.sampling_rate)
                handles[id(handle)] = value
            return handle
        if isinstance(value, dict):
            return {k: convert(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [convert(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, np.ndarray):
            return convert(value.tolist(), path)
        if isinstance(value, np.generic):
            return value.item()
        raise ConfigError(
            f"{path} is a {type(value).__name__}; episodes may hold only strings, numbers, booleans, None, lists, "
            "dicts and audio clips (the builder must convert it)."
        )

    return convert(obj, where)


class SharedCode(BytecodeCache):
    """Compiled template code, kept for the process and shared by every environment `make_environment` makes.
    They are configured alike (only their loaders' folders differ), so a template's code depends only on its
    source, name and file: tasks that share a prompt file compile it once instead of once each (nine tasks of
    one benchmark: 0.13 s of CPU before a run's first request), a test session once, not at every preparation.
    Jinja looks templates loaded through a loader (`{% include %}`) up here itself (the `bytecode_cache`
    hook); `compile_file` and template strings through `code`. An entry is keyed by the name, the file and the
    source's checksum, so an edited file is compiled again."""

    def __init__(self) -> None:
        self._code: dict[tuple[str, str], CodeType] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        bucket.code = self._code.get((bucket.key, bucket.checksum))

    def dump_bytecode(self, bucket: Bucket) -> None:
        if bucket.code is not None:
            self._code[(bucket.key, bucket.checksum)] = bucket.code

    def code(
        self, env: jinja2.Environment, source: str, name: str | None = None, filename: str | None = None
    ) -> CodeType:
        """env.compile(source, name, filename), compiled once per process."""
        bucket = self.get_bucket(env, name or "<string>", filename, source)
        if bucket.code is None:
            bucket.code = env.compile(source, name=name, filename=filename)
            self.set_bucket(bucket)
        return bucket.code


_SHARED_CODE = SharedCode()


def make_environment(search_dirs: list[Path]) -> ImmutableSandboxedEnvironment:
    """The one Jinja environment of task and judge templates: sandboxed (no attribute starting with `_`, no
    unsafe callables), immutable (no list/dict methods that modify), bounded in the memory and time a render
    may take (template_bounds.py) and strict about undefined names."""
    unique = list(dict.fromkeys(str(d) for d in search_dirs))
    return BoundedSandbox(
        loader=jinja2.FileSystemLoader(unique),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        bytecode_cache=_SHARED_CODE,
    )


def _compiled(
    env: jinja2.Environment, source: str, name: str | None = None, filename: str | None = None
) -> jinja2.Template:
    """The template of `source` in `env`, its code compiled once per process for `make_environment`'s."""
    cache = env.bytecode_cache
    code = (
        cache.code(env, source, name, filename)
        if isinstance(cache, SharedCode)
        else env.compile(source, name=name, filename=filename)
    )
    return env.template_class.from_code(env, code, env.make_globals(None), None)


class _Nonces:
    """Random 8-byte nonces as hex, drawn from the operating system's generator a few hundred at a time: a
    render is one draw from memory rather than a system call (which would hand the interpreter lock to the
    event loop in the middle of rendering, and wait to get it back)."""

    BATCH = 512

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: list[str] = []

    def forget(self) -> None:
        """In a forked child: its own draws from then on, not the parent's pool (nor its lock, held or not)."""
        self._lock, self._ready = threading.Lock(), []

    def draw(self) -> str:
        with self._lock:
            if not self._ready:
                pool = secrets.token_hex(8 * self.BATCH)
                self._ready = [pool[i : i + 16] for i in range(0, len(pool), 16)]
            return self._ready.pop()


_NONCES = _Nonces()
os.register_at_fork(after_in_child=_NONCES.forget)


class Markers:
    """The markers that audio() and turn() leave in the text of one render. Each carries a nonce drawn at
    random for that render, so text that reaches the output from data (a model's answer, a label, a stored
    dataset, a transcript) is never taken for a marker: it would have to contain a nonce it never saw. A forged
    marker stays plain text."""

    def __init__(self) -> None:
        nonce = _NONCES.draw()
        self.audio_prefix, self.turn_prefix = f"\x01{nonce}:", f"\x02{nonce}:"

    def audio(self, index: int) -> str:
        return f"{self.audio_prefix}{index}\x01"

    def turn(self, role: str) -> str:
        """What {{ turn(role) }} leaves in the rendered text."""
        if role not in ROLES:
            raise ValueError(f"turn() role must be one of {ROLES}, got {role!r}")
        return f"{self.turn_prefix}{role}\x02"

    def split(self, text: str, prefix: str, source: str) -> tuple[str, list[tuple[str, str]]]:
        """The text before the first marker, then (what the marker names, the text up to the next) for each."""
        first, *rest = text.split(prefix)
        marked = [piece.partition("\x01" if prefix == self.audio_prefix else "\x02") for piece in rest]
        if any(not end for _, end, _ in marked):  # a template copied a marker's text and cut it
            raise ConfigError(f"{source}: the prompt holds a marker that audio() or turn() did not write.")
        return first, [(name, after) for name, _, after in marked]

    def split_turns(self, text: str, source: str) -> list[tuple[Role, str]]:
        """(role, body) per turn() marker of a whole-prompt template's output."""
        before, turns = self.split(text, self.turn_prefix, source)
        if before.strip():
            raise ConfigError(
                f"{source}: text before the first turn() marker; "
                'start the template with {{ turn("system") }} or {{ turn("user") }}.'
            )
        if not turns:
            raise ConfigError(f"{source}: the prompt template produced no turn() markers.")
        if any(role not in ROLES for role, _ in turns):
            raise ConfigError(f"{source}: the prompt holds a marker that turn() did not write.")
        return [(cast(Role, role), body) for role, body in turns]


def compile_file(env: ImmutableSandboxedEnvironment, path: Path, what: str) -> jinja2.Template:
    """Compile a template so that errors and tracebacks carry its real file name; `what` names it in errors."""
    source = read_text_file(path, "template")
    try:
        return _compiled(env, source, path.name, str(path))
    except jinja2.TemplateSyntaxError as err:
        raise ConfigError(f"{path}:{err.lineno}: template syntax error in {what}: {err.message}") from err
    except SyntaxError as err:  # Python refuses the compiled template, e.g. more than 20 nested blocks
        raise ConfigError(f"{path}: {what} cannot be compiled ({err.msg}); nest fewer blocks.") from err


def render_failure(err: BaseException) -> str:
    """What went wrong in a render, for the error line: a bound says what the template tried."""
    if isinstance(err, TemplateBoundError):
        return f"the template went past a rendering bound: {err}"
    return f"{type(err).__name__}: {err}"


def template_error_location(err: BaseException, fallback: str) -> str:
    """file:line inside the template where a render error happened."""
    if isinstance(err, jinja2.TemplateSyntaxError):
        return f"{err.filename or fallback}:{err.lineno}"
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        if frame.filename and frame.filename.endswith((".jinja", ".j2", ".txt", ".jinja2")):
            return f"{frame.filename}:{frame.lineno}"
    return fallback


def _clip_of(obj: Any, handles: dict[int, AudioClip]) -> AudioClip | None:
    if isinstance(obj, dict):
        obj = obj.get("audio")
    return handles.get(id(obj)) if isinstance(obj, ClipHandle) else None


def episode_clips(episode: dict[str, Any], k: int) -> list[tuple[str, AudioClip]]:
    """The clips a k-shot prompt must present, with a readable name for each."""
    out: list[tuple[str, AudioClip]] = []
    for i, clip in enumerate(episode.get("context") or []):
        out.append((f"context clip {i + 1} ({clip.get('role', '')})", clip["audio"]))
    for d, demo in enumerate((episode.get("demos") or [])[:k]):
        for clip in demo.get("clips") or []:
            out.append((f"demo {d + 1} clip {clip.get('role', '')!r}", clip["audio"]))
    for clip in (episode.get("query") or {}).get("clips") or []:
        out.append((f"query clip {clip.get('role', '')!r}", clip["audio"]))
    return out


class _Placement:
    """Collects audio() and turn() calls during one render."""

    def __init__(self, handles: dict[int, AudioClip]) -> None:
        self.handles = handles
        self.marks = Markers()
        self.turn = self.marks.turn
        self.clips: list[AudioClip] = []
        self.skipped: list[AudioClip] = []

    def audio(self, obj: Any) -> str:
        clip = _clip_of(obj, self.handles)
        if clip is None:
            raise TypeError(f"audio() expects a clip from the episode, got {type(obj).__name__}")
        self.clips.append(clip)
        return self.marks.audio(len(self.clips) - 1)

    def skip_audio(self, obj: Any) -> str:
        clip = _clip_of(obj, self.handles)
        if clip is None:
            raise TypeError(f"skip_audio() expects a clip from the episode, got {type(obj).__name__}")
        self.skipped.append(clip)
        return ""


class PromptRenderer:
    """Turns (episode, k, parameters) into messages for one task."""

    def __init__(self, task: TaskConfig, extra_dirs: list[Path] | None = None) -> None:
        self.task = task
        from audioeval.resources import tasks_dir

        self.env = make_environment(
            [task.dir_of("templates"), task.directory, *(extra_dirs or []), tasks_dir()]
        )
        self._view: tuple[Any, dict[str, Any], dict[int, AudioClip]] | None = None
        self.templates: dict[str, jinja2.Template] = {}
        for role, path in task.templates.items():
            self.templates[role] = compile_file(self.env, path, f"templates.{role} of task {task.name!r}")
        self.target_template = self._compile_string(task.target, "target")
        self.label_space_expr = None
        if isinstance(task.label_space, str):
            try:
                self.label_space_expr = self.env.compile_expression(task.label_space.strip().strip("{} "))
            except jinja2.TemplateSyntaxError as err:
                raise ConfigError(
                    f"{task.path}: label_space expression is not valid Jinja: {err.message}"
                ) from err

    def _compile_string(self, source: str, field_name: str) -> jinja2.Template:
        try:
            return _compiled(self.env, source)
        except jinja2.TemplateSyntaxError as err:
            raise ConfigError(
                f"{self.task.path}: `{field_name}` is not a valid Jinja template: {err.message}"
            ) from err

    def _episode_view(self, episode: dict[str, Any]) -> tuple[dict[str, Any], dict[int, AudioClip]]:
        """The template view of an episode and its handle table, built once per episode for all its k."""
        cached = self._view
        if cached is None or cached[0] is not episode:
            handles: dict[int, AudioClip] = {}
            cached = (episode, template_view(episode, handles), handles)
            self._view = cached
        return cached[1], cached[2]

    def _context(self, episode: dict[str, Any], k: int) -> tuple[dict[str, Any], _Placement]:
        view, handles = self._episode_view(episode)
        placement = _Placement(handles)
        context = {
            "episode": view,
            "demos": (view.get("demos") or [])[:k],
            "query": view.get("query") or {},
            "context_clips": view.get("context") or [],
            "metadata": view.get("metadata") or {},
            "k": k,
            "params": template_view(self.task.param_values, where="params"),
            "task": self.task.name,
            "audio": placement.audio,
            "skip_audio": placement.skip_audio,
            "turn": placement.turn,
        }
        return context, placement

    def _render(self, role: str, context: dict[str, Any]) -> str:
        template = self.templates[role]
        try:
            return render_bounded(template, context)
        except Exception as err:  # noqa: BLE001 - any template failure is reported with its location
            where = template_error_location(err, str(self.task.templates[role]))
            raise ConfigError(
                f"{where}: error rendering templates.{role} of task {self.task.name!r}: {render_failure(err)}"
            ) from err

    def render_target(self, episode: dict[str, Any], k: int) -> str:
        context, _ = self._context(episode, k)
        try:
            return render_bounded(self.target_template, context).strip()
        except Exception as err:  # noqa: BLE001
            raise ConfigError(
                f"{self.task.path}: error rendering `target` of task {self.task.name!r}: {render_failure(err)}"
            ) from err

    def label_space(self, episode: dict[str, Any], k: int) -> tuple[str, ...] | None:
        if self.task.label_space is None:
            return None
        if isinstance(self.task.label_space, list):
            return tuple(self.task.label_space)
        context, _ = self._context(episode, k)
        try:
            assert self.label_space_expr is not None  # set whenever label_space is an expression
            value = evaluate_bounded(self.label_space_expr, context)
        except Exception as err:  # noqa: BLE001
            raise ConfigError(
                f"{self.task.path}: error evaluating `label_space`: {render_failure(err)}"
            ) from err
        if not isinstance(value, list | tuple) or not value:
            raise ConfigError(
                f"{self.task.path}: `label_space` must evaluate to a non-empty list, got {value!r}."
            )
        return tuple(str(v) for v in value)

    def render(self, episode: dict[str, Any], k: int) -> tuple[Message, ...]:
        context, placement = self._context(episode, k)
        if "prompt" in self.templates:
            text = self._render("prompt", context)
            messages = self._split_turns(text, placement, "prompt")
        else:
            messages = self._render_per_message(context, placement)
        self._check_clips(episode, k, placement, messages)
        return tuple(messages)

    def _render_per_message(self, context: dict[str, Any], placement: _Placement) -> list[Message]:
        messages: list[Message] = []
        if "system" in self.templates:
            system = self._render("system", context)
            if system.strip():
                messages.append(self._message("system", system, placement, "system"))
        pending_user: list[str] = []
        for index, demo in enumerate(context["demos"], start=1):
            demo_ctx = {**context, "demo": demo, "index": index}
            pending_user.append(self._render("demo", demo_ctx) if "demo" in self.templates else "")
            if "demo_answer" in self.templates:
                messages.append(self._message("user", "\n".join(pending_user), placement, "demo"))
                pending_user = []
                messages.append(
                    self._message(
                        "assistant", self._render("demo_answer", demo_ctx), placement, "demo_answer"
                    )
                )
        pending_user.append(self._render("query", context))
        messages.append(
            self._message("user", "\n".join(p for p in pending_user if p != ""), placement, "query")
        )
        return messages

    def _message(self, role: Role, text: str, placement: _Placement, template_role: str) -> Message:
        if placement.marks.turn_prefix in text:
            raise ConfigError(
                f"{self.task.templates[template_role]}: turn() is only allowed in a whole-prompt template (`prompt`)."
            )
        return Message(role=role, parts=self._parts(text, placement, template_role))

    def _split_turns(self, text: str, placement: _Placement, template_role: str) -> list[Message]:
        turns = placement.marks.split_turns(text, str(self.task.templates[template_role]))
        return [Message(role=role, parts=self._parts(body, placement, template_role)) for role, body in turns]

    def _parts(
        self, text: str, placement: _Placement, template_role: str
    ) -> tuple[TextPart | AudioPart, ...]:
        where = self.task.templates[template_role]
        before, marked = placement.marks.split(text, placement.marks.audio_prefix, str(where))
        raw = _RAW_PLACEHOLDERS.search(before + "".join(after for _, after in marked))
        if raw:
            raise ConfigError(
                f"{where}: the template writes the audio placeholder {raw.group(0)!r} "
                "as text. Place audio with {{ audio(clip) }}; each model backend inserts its own audio tokens."
            )
        parts: list[TextPart | AudioPart] = [TextPart(before)]
        for index, after in marked:
            if not (index.isascii() and index.isdigit() and int(index) < len(placement.clips)):
                raise ConfigError(f"{where}: the prompt holds a marker that audio() or turn() did not write.")
            parts += [AudioPart(placement.clips[int(index)]), TextPart(after)]
        if parts and isinstance(parts[0], TextPart):
            parts[0] = TextPart(parts[0].text.lstrip())
        if parts and isinstance(parts[-1], TextPart):
            parts[-1] = TextPart(parts[-1].text.rstrip())
        return tuple(p for p in parts if not (isinstance(p, TextPart) and not p.text))

    def _check_clips(
        self, episode: dict[str, Any], k: int, placement: _Placement, messages: list[Message]
    ) -> None:
        expected = episode_clips(episode, k)
        placed = [p.clip for m in messages for p in m.parts if isinstance(p, AudioPart)]
        placed_ids = [id(c) for c in placed]
        skipped_ids = {id(c) for c in placement.skipped}
        where = ", ".join(str(p) for p in self.task.templates.values())
        expected_ids = {id(c) for _, c in expected}
        for c in placed:
            if id(c) not in expected_ids:
                raise ConfigError(
                    f"{where}: task {self.task.name!r} (k={k}) places an audio clip that is not among the episode's "
                    f"context, first {k} demo and query clips. Place only clips of `context_clips`, `demos` and `query`."
                )
        for name, clip in expected:
            count = placed_ids.count(id(clip))
            if count == 0 and id(clip) not in skipped_ids:
                raise ConfigError(
                    f"{where}: task {self.task.name!r} (k={k}): the templates place {len(placed)} audio clip(s) but the "
                    f"episode has {len(expected)}; {name} is never placed. Add {{{{ audio(...) }}}} for it, or "
                    "{{ skip_audio(...) }} if leaving it out is intended."
                )
            if count > 1:
                raise ConfigError(
                    f"{where}: task {self.task.name!r} (k={k}): {name} is placed {count} times; place each clip once."
                )
