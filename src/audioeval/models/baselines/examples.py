"""The labelled examples a non-LLM baseline can learn from, read off the request's label-free view of its
episode (`Request.shown`): the clips of the k demonstrations with their answers, the labelled context clips
that can serve as examples, and the query clip to label."""

from __future__ import annotations

from dataclasses import dataclass, field

from audioeval.errors import ModelError
from audioeval.types import AudioClip, Request, ShownEpisode


@dataclass
class LabeledClip:
    clip: AudioClip
    label: str


@dataclass
class Examples:
    examples: list[LabeledClip]  # labelled training clips derived from the demos
    target: AudioClip  # the query clip whose label is asked for
    # labelled context clips whose label is a possible answer (the Morse A-Z bank for a one-letter query);
    # shown at every k, including k=0
    context_examples: list[LabeledClip] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.examples]


def shown_of(request: Request, model_name: str) -> ShownEpisode:
    if request.shown is None:
        raise ModelError(
            f"model {model_name!r} needs the episode structure, which this request does not carry."
        )
    return request.shown


def examples_of(request: Request, model_name: str) -> Examples:
    shown = shown_of(request, model_name)
    query_clips = shown.query.clips
    unlabeled = [c for c in query_clips if c.label is None]
    target = (unlabeled or list(query_clips))[-1] if query_clips else None
    if target is None:
        raise ModelError(f"model {model_name!r}: the query of task {request.rid.task!r} has no audio clip.")
    # Training clips: the demos' clips in the query's role, labelled with the demo's answer (AudioRemap's MIX);
    # otherwise every demo clip that carries its own label (single-clip tasks, whose demo clips carry the demo's
    # label, and AnomalyDetect's Normal/Anomalous recordings).
    examples = [
        LabeledClip(c.audio, d.label)
        for d in shown.demos
        for c in d.clips
        if c.role == target.role and d.label is not None
    ]
    if not examples:
        examples = [
            LabeledClip(c.audio, c.label) for d in shown.demos for c in d.clips if c.label is not None
        ]
    answers = set(request.choices or ())
    context_examples = [
        LabeledClip(c.audio, c.label) for c in shown.context if c.label is not None and c.label in answers
    ]
    return Examples(examples=examples, target=target.audio, context_examples=context_examples)
