"""What the non-LLM baselines see of a request: the k demonstrations shown, their labels, the labelled
context clips that can serve as examples, and the query clip to label. Built from `request.info["episode"]`,
which the evaluator attaches to every request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audioeval.errors import ModelError
from audioeval.types import AudioClip, Request


@dataclass
class LabeledClip:
    clip: AudioClip
    label: str


@dataclass
class EpisodeView:
    demos: list[dict[str, Any]]  # the first k demos
    examples: list[LabeledClip]  # labelled training clips derived from the demos
    target: AudioClip  # the query clip whose label is asked for
    # labelled context clips whose label is a possible answer (the Morse A-Z bank for a one-letter query);
    # shown at every k, including k=0
    context_examples: list[LabeledClip] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.examples]


def episode_view(request: Request, model_name: str) -> EpisodeView:
    episode = request.info.get("episode")
    if not episode:
        raise ModelError(
            f"model {model_name!r} needs the episode structure, which this request does not carry."
        )
    demos = (episode.get("demos") or [])[: request.rid.shots]
    query_clips = (episode.get("query") or {}).get("clips") or []
    unlabeled = [c for c in query_clips if c.get("label") in (None, "")]
    target_clip = (unlabeled or query_clips)[-1] if query_clips else None
    if target_clip is None:
        raise ModelError(f"model {model_name!r}: the query of task {request.rid.task!r} has no audio clip.")
    role = target_clip.get("role")
    # Training clips: the demos' clips in the query's role, labelled with the demo's label (AudioRemap's MIX);
    # otherwise every demo clip that carries its own label (single-clip tasks, whose demo clips carry the demo's
    # label, and AnomalyDetect's Normal/Anomalous recordings).
    examples = [
        LabeledClip(c["audio"], str(d["label"]))
        for d in demos
        for c in d.get("clips") or []
        if c.get("role") == role and d.get("label") not in (None, "")
    ]
    if not examples:
        examples = [
            LabeledClip(c["audio"], str(c["label"]))
            for d in demos
            for c in d.get("clips") or []
            if c.get("label") not in (None, "")
        ]
    answers = set(request.choices or ())
    context_examples = [
        LabeledClip(c["audio"], str(c["label"]))
        for c in episode.get("context") or []
        if c.get("label") not in (None, "") and str(c["label"]) in answers
    ]
    return EpisodeView(
        demos=demos, examples=examples, target=target_clip["audio"], context_examples=context_examples
    )
