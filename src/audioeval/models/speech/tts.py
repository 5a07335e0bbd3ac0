"""`--model tts`: any registered text model's answer, spoken by eSpeak NG at 24 kHz: an offline reference for
the spoken-answer path, where the words said are known exactly (the transcript), so the ASR's loss is
measurable.

    --model tts --model_args text_model=openai,model=gpt-4o-mini,base_url=http://...,voice=en+m3
    --model tts --model_args text_model=chance

`voice` (language, optionally +m1..m7 / +f1..f5) and `speaking_rate` (words per minute) belong to the
synthesis; every other argument goes to the text model, which checks its own. The text model is asked as it
would be on its own: tts streams when its text model streams (an API: concurrently), and takes batches of
`--batch_size` when it takes batches (hf-chat: the serving path cuts them by request order, so what is batched
with what never depends on timing). The text model's error, if any, is the answer's; an answer longer than
MAX_SPOKEN_CHARS (20,000 characters, some 22 minutes of speech) is a counted failure saying so. Synthesis is not streamed:
the first audio exists when the whole answer is synthesised, so `time_to_first_audio_s` equals `generation_s`
(text generation, of the whole batch for a batch text model, plus synthesis).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Annotated, Any

from audioeval.audio.speech import synthesize
from audioeval.config.fields import Arg
from audioeval.errors import DataError, ModelError
from audioeval.models.base import ModelTask, StreamingModel
from audioeval.types import AudioClip, Failure, Request, Response, SpokenAnswer

SAMPLING_RATE = 24000
# The longest answer tts speaks: at eSpeak NG's default 175 words a minute, about 900 characters a minute, so
# some 22 minutes of speech (64 MB of samples). A longer answer is a counted failure saying so.
MAX_SPOKEN_CHARS = 20_000
OWN_ARGS = ("text_model", "voice", "speaking_rate")


def split_args(model_args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(text model name, its arguments) from tts --model_args."""
    name = model_args.get("text_model")
    if not name:
        raise ModelError(
            "--model tts needs text_model=NAME, the model whose answers are spoken: e.g. "
            "text_model=openai,model=gpt-4o-mini,base_url=URL or text_model=hf-chat,pretrained=FOLDER."
        )
    if name == "tts":
        raise ModelError("--model tts: text_model cannot itself be tts.")
    return str(name), {k: v for k, v in model_args.items() if k not in OWN_ARGS}


def parse_voice(voice: str) -> tuple[str, str | None]:
    language, _, variant = voice.partition("+")
    return language, variant or None


class TtsModel(StreamingModel):
    name = "tts"
    speaks = True

    def __init__(
        self,
        *,
        text_model: Annotated[
            str,
            Arg(
                "the registered model whose answers are spoken (not tts); its arguments go beside",
                min_length=1,
            ),
        ],
        voice: Annotated[
            str, Arg("eSpeak NG voice: a language, optionally +m1..m7 or +f1..f5 (`en+m3`)", min_length=1)
        ] = "en",
        speaking_rate: Annotated[int, Arg("words per minute (eSpeak NG's range)", ge=80, le=450)] = 160,
        batch_size: int = 1,
        seed: int = 0,
        **text_args: Any,
    ) -> None:
        super().__init__(batch_size=batch_size, seed=seed)
        from audioeval.models.registry import create_model

        name, args = split_args({"text_model": text_model, **text_args})
        self.voice = str(voice)
        self.speaking_rate = int(speaking_rate)
        self.text = create_model(name, args, batch_size, seed)
        self.streams = self.text.streams  # take work the way the text model does
        self._synth = ThreadPoolExecutor(1, thread_name_prefix="audioeval-espeak")  # the engine is serial
        try:
            self._speak("")  # a voice eSpeak NG does not know is an error now, not on every request
        except DataError as err:
            self.close()
            raise ModelError(f"--model_args voice={voice}: {err}") from err

    @classmethod
    def check_args(cls, model_args: dict[str, Any]) -> None:
        from audioeval.models.base import check_init_args
        from audioeval.models.registry import get_model_class

        name, args = split_args(model_args)
        check_init_args(cls, {k: v for k, v in model_args.items() if k in OWN_ARGS})
        try:
            get_model_class(name).check_args(args)
        except ModelError as err:
            raise ModelError(f"--model tts, text model {name!r}: {err}") from err

    @classmethod
    def code_modules(cls, model_args: dict[str, Any]) -> list[str]:
        from audioeval.models.registry import get_model_class

        name, args = split_args(model_args)
        return [cls.__module__, *get_model_class(name).code_modules(args)]

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        """Generation settings go to the text model, so they are its to declare."""
        from audioeval.models.registry import get_model_class

        name, args = split_args(model_args)
        get_model_class(name).check_gen_kwargs(gen_kwargs, source, args)

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "text_model": self.text.identity,
            "voice": self.voice,
            "speaking_rate": self.speaking_rate,
            "sampling_rate": SAMPLING_RATE,
            "espeak": metadata.version("espeakng-loader"),
        }

    @property
    def display_name(self) -> str:
        return f"tts__{self.text.display_name}"

    @property
    def max_in_flight(self) -> int:
        return self.text.max_in_flight

    @property
    def request_chunk_size(self) -> int:
        return self.text.request_chunk_size

    @property
    def batch_window(self) -> int:  # type: ignore[override]
        return self.text.batch_window

    def prepare(self, tasks: Sequence[ModelTask]) -> None:
        self.text.prepare(tasks)

    def _speak(self, text: str) -> AudioClip:
        language, variant = parse_voice(self.voice)
        samples = synthesize(
            text, language=language, variant=variant, rate=self.speaking_rate, sampling_rate=SAMPLING_RATE
        )
        return AudioClip.from_array(samples, SAMPLING_RATE)

    def generate(self, requests: list[Request]) -> list[Response]:
        """A batch text model's answers to one chunk, each spoken in turn (called from the serving path's
        worker thread); a streaming text model's go through generate_one."""
        if self.streams:
            return super().generate(requests)
        started = time.perf_counter()
        return [self._spoken(answer, started) for answer in self.text.generate(requests)]

    async def generate_one(self, request: Request) -> Response:
        self.stats.enter()  # the run's generation time: text and synthesis
        try:
            started = time.perf_counter()
            answer = await self.text.generate_one(request)  # type: ignore[attr-defined]
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._synth, self._spoken, answer, started)
        finally:
            self.stats.leave()

    def _spoken(self, answer: Response, started: float) -> Response:
        """The text answer with its speech; `started` is when its text was asked for."""
        if not answer.ok:
            return answer
        text = answer.text or ""
        if (
            len(text) > MAX_SPOKEN_CHARS
        ):  # eSpeak NG takes minutes for a book, and its audio would not fit memory
            failure = Failure(
                "limit",
                f"tts: the answer is {len(text):,} characters; tts speaks at most {MAX_SPOKEN_CHARS:,} (about "
                f"{MAX_SPOKEN_CHARS // 900} minutes of speech)",
            )
            return Response(text=None, failure=failure, latency_s=answer.latency_s, info=answer.info)
        try:
            clip = self._speak(text)
        except DataError as err:
            return Response(text=None, error=f"tts: eSpeak NG could not speak the answer: {err}")
        elapsed = time.perf_counter() - started
        spoken = SpokenAnswer(clip, transcript=text, time_to_first_audio_s=elapsed, generation_s=elapsed)
        return Response(text=text, latency_s=elapsed, info=answer.info, spoken=spoken)

    async def aclose(self) -> None:
        await self.text.aclose()

    def close(self) -> None:
        self._synth.shutdown(wait=False, cancel_futures=True)
        self.text.close()
