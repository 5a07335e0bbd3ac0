"""The speech stage: a spoken answer heard before it is scored (issue: models that answer in speech).

A backend that speaks (`Model.speaks`) answers with audio and, when it gives one, its own transcript
(`Response.spoken`). Each spoken answer's audio is transcribed by the run's ASR (`--asr`, one request per
answer through the one serving path: cached under the audio's hash and the ASR's identity, concurrent,
overlapping generation and judging), then the text that is scored is chosen (`--spoken_text`): the ASR text
(`asr`, the default, as benchmarks that convert audio answers into text do) or the model's transcript
(`transcript`). Parsers, metrics and judges see only the chosen text. An answer whose chosen text is missing
(the ASR failed, or the model gave no transcript) is a counted failure with its reason, never a silent zero.

With --log_samples the audio is written once per content to `spoken/<sha256>.wav` in the run folder and the
sample keeps a `spoken` block (the file, both texts, the ASR's name, timings).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from audioeval.errors import UsageError
from audioeval.models.base import Model
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.speech.asr import DEFAULT_ASR, NO_ASR, asr_model_name, create_asr
from audioeval.results.spoken_metrics import spoken_scores
from audioeval.run.cache import ResponseStore
from audioeval.run.serving import Server
from audioeval.run.stages import RunContext, Sample, Stage
from audioeval.types import (
    AudioClip,
    AudioPart,
    Failure,
    Message,
    Request,
    RequestId,
    Response,
    SpokenAnswer,
)

SpokenText = Literal["asr", "transcript"]
SPOKEN_TEXTS = ("asr", "transcript")
SMOKE_TEST_ASR = {"pocketsphinx": "a smoke-test ASR (it recognises 16 of 60 real FSDD digit recordings)"}


@dataclass
class Heard:
    """A spoken answer after the speech stage: the response to score, the samples' block, the metrics."""

    response: Response  # text = the chosen text; spoken dropped (the audio is not kept past this stage)
    block: dict[str, Any]
    scores: dict[str, float | None] = field(default_factory=dict)


def chosen_asr(asr: str | None, model: Model) -> str:
    """The ASR the run uses: the one asked for, else pocketsphinx for a model that speaks, else none."""
    if asr is not None:
        return asr
    return DEFAULT_ASR if model.speaks else NO_ASR


class SpeechStage(Stage):
    """Each spoken answer heard (transcribed) the moment it arrives, before it is judged and scored."""

    name = "asr"

    def __init__(
        self, asr_name: str, asr: Model | None, spoken_text: SpokenText, store: ResponseStore
    ) -> None:
        if spoken_text == "asr" and asr is None:
            raise UsageError(
                "--spoken_text asr scores the ASR of each spoken answer, and --asr none names no ASR: pass "
                "--asr pocketsphinx|openai|hf, or score the model's own transcripts with --spoken_text transcript."
            )
        self.asr_name = asr_name
        self.asr = asr
        self.spoken_text = spoken_text
        self.server = (
            Server(asr, store, kind="asr", identity={"asr": asr.identity}) if asr is not None else None
        )
        self.spoken_dir: Path | None = None  # set when samples are logged

    @classmethod
    def create(
        cls,
        asr: str | None,
        asr_args: dict[str, Any],
        spoken_text: SpokenText,
        model: Model,
        store: ResponseStore,
    ) -> SpeechStage | None:
        """The stage for a model that speaks; None for one that does not (an --asr given is then unused)."""
        if not model.speaks:
            return None
        name = chosen_asr(asr, model)
        return cls(name, create_asr(name, asr_args), spoken_text, store)

    @property
    def max_in_flight(self) -> int:
        return self.asr.max_in_flight if self.asr is not None else 0

    def busy_now(self) -> float:
        return self.asr.stats.busy_now() if self.asr is not None else 0.0

    def endpoints(self) -> dict[str, EndpointStats]:
        return {f"asr {self.asr_name}": self.asr.stats} if self.asr is not None else {}

    def begin(self, context: RunContext) -> None:
        if context.run_dir is not None:
            self.spoken_dir = context.run_dir / "spoken"

    async def finish(self, sample: Sample) -> None:
        response = sample.response
        if response is None or not response.ok or response.spoken is None:
            return
        heard = await self.hear(sample.request, response)  # the text to score, chosen from what was said
        sample.response = heard.response
        sample.scores.update(heard.scores)
        sample.blocks["spoken"] = heard.block

    def describe(self) -> dict[str, Any]:
        """results.json `speech`: which ASR transcribed the answers and which text was scored."""
        out: dict[str, Any] = {
            "asr": self.asr_name,
            "asr_model": asr_model_name(self.asr) if self.asr is not None else None,
            "asr_identity": self.asr.identity if self.asr is not None else None,
            "spoken_text": self.spoken_text,
        }
        if self.asr_name in SMOKE_TEST_ASR:
            out["note"] = (
                f"{self.asr_name} is {SMOKE_TEST_ASR[self.asr_name]}: use it to check the path, not to score"
            )
        return out

    # ------------------------------------------------------------------------------------------------------
    async def hear(self, request: Request, response: Response) -> Heard:
        spoken = response.spoken
        assert spoken is not None  # the pipeline calls this for spoken answers only
        asr_text, asr_error = await self._transcribe(request.rid, spoken.audio)
        text, failure = self._choose(spoken, asr_text, asr_error)
        scored = Response(
            text=text,
            failure=failure,
            latency_s=response.latency_s,
            cached=response.cached,
            info=response.info,
        )
        audio_file = (
            await asyncio.to_thread(self._write, spoken.audio) if self.spoken_dir is not None else None
        )
        block = {
            "audio_file": audio_file,
            "audio": spoken.audio.describe(),
            "transcript": spoken.transcript,
            "asr_text": asr_text,
            "asr_error": asr_error,
            "asr": self.asr_name,
            "scored": self.spoken_text,
            "time_to_first_audio_s": spoken.time_to_first_audio_s,
            "generation_s": spoken.generation_s,
            "real_time_factor": spoken.real_time_factor,
        }
        scores = spoken_scores(
            spoken.transcript,
            asr_text,
            spoken.audio.seconds,
            spoken.time_to_first_audio_s,
            spoken.real_time_factor,
        )
        return Heard(scored, block, scores)

    async def _transcribe(self, rid: RequestId, clip: AudioClip) -> tuple[str | None, str | None]:
        """(ASR text, why there is none)."""
        if self.server is None:
            return None, None
        asked = Request(
            messages=(Message("user", (AudioPart(clip),)),),
            gen_kwargs={},
            rid=RequestId(f"{rid.task}:asr", rid.shots, rid.episode),
        )
        try:
            heard = await self.server.generate(asked)
        except Exception as err:  # noqa: BLE001 - an ASR that stops (a dead worker, its endpoint down) fails the answer
            return None, f"{type(err).__name__}: {err}"
        return (heard.text, None) if heard.ok else (None, heard.error or "no transcript")

    def _choose(
        self, spoken: SpokenAnswer, asr_text: str | None, asr_error: str | None
    ) -> tuple[str | None, Failure | None]:
        """(the text to score, or why there is none)."""
        if self.spoken_text == "asr":
            if asr_text is None:
                return None, Failure("asr", f"ASR {self.asr_name} failed on the spoken answer: {asr_error}")
            return asr_text, None
        if spoken.transcript is None:
            return None, Failure(
                "malformed",
                "the model gave no transcript of its spoken answer (score the ASR text: --spoken_text asr)",
            )
        return spoken.transcript, None

    def _write(self, clip: AudioClip) -> str:
        """spoken/<sha256>.wav, written once per content (atomically: ranks may write the same clip)."""
        assert self.spoken_dir is not None
        path = self.spoken_dir / f"{clip.sha256}.wav"
        if not path.exists():
            self.spoken_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{id(clip)}.tmp")
            tmp.write_bytes(clip.wav_bytes())
            os.replace(tmp, path)
        return f"spoken/{path.name}"

    async def aclose(self) -> None:
        if self.server is not None:
            await self.server.close()

    def close(self) -> None:
        if self.asr is not None:
            self.asr.close()
