"""The run's optional stages, composed as a list (evaluator.py builds it, pipeline.py runs it).

Every sample takes the same way through the run: rendered, sent to the model, answered, then handed to each
stage in the list's order (the speech stage hears a spoken answer, the judges judge the text chosen, the
reference models' own answers are collected), then scored and logged. A stage is a `Stage`: it says which
tasks it works on, how many requests it keeps in flight (the pipeline's memory bound counts them), and
overrides the hooks it needs, each a no-op by default:

- `begin(context)`: before the first request (e.g. the reference models' studies start on a thread);
- `dispatch(samples)`: a window of samples was just sent to the model (reference models send theirs);
- `finish(sample)`: the model answered this sample (await what the stage adds to it);
- `aclose()` at the end of the run's event loop (connections), `close()` after the run (models).

Adding a stage is a class and one entry in the list: nothing else names it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audioeval.models.endpoint_stats import EndpointStats
from audioeval.results.scoring import Judgments
from audioeval.run.prepared import PreparedTask
from audioeval.types import Request, Response

if TYPE_CHECKING:
    from audioeval.run.distributed import Topology
    from audioeval.run.synthesis import EpisodeSource


@dataclass
class Sample:
    """One request on its way through the run, and what the stages add to it."""

    task: PreparedTask
    request: Request
    target: str
    answer: asyncio.Future[Response]  # the model's answer, on its way
    response: Response | None = None  # the answer to score (the speech stage replaces a spoken one)
    judgments: Judgments | None = None
    judge_ids: list[str] | None = None  # set on judged tasks: the judges whose verdicts the metrics read
    waiting: dict[str, asyncio.Future[Response]] = field(default_factory=dict)  # reference answers on the way
    references: dict[str, Response] = field(default_factory=dict)  # reference model -> its answer
    scores: dict[str, float | None] = field(default_factory=dict)  # beside the task's own (spoken metrics)
    blocks: dict[str, Any] = field(default_factory=dict)  # what the sample's record gets (spoken, judgments)


@dataclass
class RunContext:
    """What a stage may need to know about the run when it begins."""

    tasks: list[PreparedTask]
    topology: Topology
    run_dir: Path | None  # set when samples are logged
    show_progress: bool
    source: EpisodeSource


class Stage:
    name = ""  # results.json timing reports `<name>_seconds` of the stages that keep requests in flight

    def applies(self, task: PreparedTask) -> bool:
        return True

    @property
    def max_in_flight(self) -> int:
        return 0

    def busy_now(self) -> float:
        """Seconds with at least one of its requests in flight so far (the run's figures)."""
        return 0.0

    def endpoints(self) -> dict[str, EndpointStats]:
        """Its endpoints' figures, by the name results.json gives them (`judge <id>`, `asr <name>`)."""
        return {}

    def row_sets(self, task: PreparedTask) -> list[str]:
        """Names of the rows of its own it scores on `task` from `Sample.references` (a reference model's)."""
        return []

    def begin(self, context: RunContext) -> None:  # noqa: B027 - optional hook
        pass

    def dispatch(self, samples: list[Sample]) -> None:  # noqa: B027 - optional hook
        pass

    async def finish(self, sample: Sample) -> None:  # noqa: B027 - optional hook
        pass

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
