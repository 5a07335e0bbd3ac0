"""One logged sample, typed: what a line of samples_<task>.jsonl holds. The evaluator builds a SampleRecord per
finished sample, the sample log writes `to_json()`, and readers (the viewer, `compare`) get the same type back
from `SampleRecord.from_json` (results/run_files.py reads whole files, naming file:line of a damaged line).

The nested values that stay JSON (messages, verdicts, a spoken answer's block) are TypedDicts: plain dicts at
run time, typed for readers and for the published JSON Schema (docs/schemas/sample.schema.json)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from audioeval.types import Failure


class LoggedText(TypedDict):
    type: Literal["text"]
    text: str


class LoggedAudio(TypedDict):
    """A clip as logs show it: its content hash, duration and rate (never the samples)."""

    type: Literal["audio"]
    sha256: str
    seconds: float
    sampling_rate: int


#: a part of a message, told apart by its `type`
LoggedPart = Annotated[LoggedText | LoggedAudio, Field(discriminator="type")]


class LoggedMessage(TypedDict):
    role: str
    content: list[LoggedPart]


class Verdict(TypedDict):
    """One judge's verdict on one sample for one role: `value` None is a judge failure; `values` holds each
    order of a position-swapped judgment, `raw` the judge's replies."""

    value: float | str | None
    values: list[float | str | None]
    raw: list[str | None]
    error: str | None
    out_of_range: NotRequired[bool]


class AudioDescription(TypedDict):
    sha256: str
    seconds: float
    sampling_rate: int


class SpokenBlock(TypedDict):
    """A spoken answer: where its audio is, the model's own transcript and the ASR's, which was scored."""

    audio_file: str | None
    audio: AudioDescription
    transcript: str | None
    asr_text: str | None
    asr_error: str | None
    asr: str | None
    scored: str
    time_to_first_audio_s: float | None
    generation_s: float
    real_time_factor: float | None


#: judge role -> judge id -> verdict
Judgments = dict[str, dict[str, Verdict]]


@dataclass
class SampleRecord:
    """One sample: which (task, episode, k), what the model was asked (`messages`, each clip as its hash) and
    answered, how it was scored. `error` is why the model gave no answer (None when it answered), as a message;
    `failure` the same typed (kind, HTTP status, detail), written only for a failed sample (files written before
    it existed have the message alone)."""

    task: str  # `<task>@<condition>` for a degraded copy under --augment
    episode: int
    episode_id: str | None
    shots: int
    metadata: dict[str, Any]  # the episode's facts (builder)
    request_key: str | None  # the content hash the response cache keys on (model identity included)
    messages: list[LoggedMessage] | None
    gen_kwargs: dict[str, Any] | None
    response: str | None
    error: str | None
    prediction: str | None  # the parsed answer; None: a parse failure or no answer
    target: str
    parse_failure: bool
    scores: dict[str, float | None]
    audio_seconds: float
    latency_s: float
    cached: bool
    response_info: dict[str, Any] | None = None  # what the backend says about its answer
    spoken: SpokenBlock | None = None  # for a model that answers in speech
    judgments: Judgments | None = None  # for a judged task
    failure: Failure | None = None  # why the model gave no answer, typed (`error` is its message)
    #: fields this version does not know, kept as read (and written back after the others)
    extra: SkipJsonSchema[dict[str, Any]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """The model gave no answer (the sample is in no metric)."""
        return self.error is not None or self.response is None

    def to_json(self) -> dict[str, Any]:
        """The samples line, in its documented key order (the optional blocks only when present)."""
        out = {name: getattr(self, name) for name in _ALWAYS}
        for name in _WHEN_PRESENT:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.failure is not None:
            out["failure"] = {
                "kind": self.failure.kind,
                "status": self.failure.status,
                "detail": self.failure.detail,
            }
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any) -> SampleRecord:
        """The record of one parsed line; a pydantic ValidationError names the field that is not what audioeval
        writes, a TypeError says the line is not an object."""
        if not isinstance(data, dict):
            raise TypeError(type(data).__name__)
        if data.keys() <= _KNOWN:  # what this version writes: nothing to set aside
            record: SampleRecord = sample_adapter().validate_python(data)
            return record
        record = sample_adapter().validate_python({k: v for k, v in data.items() if k in _KNOWN})
        record.extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return record


_WHEN_PRESENT = ("response_info", "spoken", "judgments")
_ALWAYS = tuple(f.name for f in fields(SampleRecord) if f.name not in (*_WHEN_PRESENT, "failure", "extra"))
_KNOWN = frozenset((*_ALWAYS, *_WHEN_PRESENT, "failure"))

_ADAPTER: Any = None


def sample_adapter() -> Any:
    """The pydantic TypeAdapter of a sample line (made on first use: writers never need it)."""
    global _ADAPTER
    if _ADAPTER is None:
        from pydantic import TypeAdapter

        _ADAPTER = TypeAdapter(SampleRecord)
    return _ADAPTER
