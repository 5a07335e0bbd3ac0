"""What a task (or the whole run) cost on one process: the figures results.json reports under `timing`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


class CpuCounter:
    """CPU seconds spent in one kind of work on this process, summed over the threads that do it."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self.seconds += seconds


GENERATE_CPU = CpuCounter()  # inside backends' own generate() calls (serving.py)
SYNTHESIS_CPU = CpuCounter()  # episodes made on this process rather than in a worker (synthesis.py)


@dataclass
class TaskTiming:
    wall_s: float = 0.0
    busy_s: float = 0.0  # sum over ranks of each rank's time in the run's loop (or with the task under way)
    synthesis_s: float = (
        0.0  # making episodes, in worker processes or on the feed thread, overlapping the rest
    )
    synthesized: int = 0  # episodes synthesized (the others were read from the episode store)
    generate_s: float = 0.0  # time with at least one model request in flight
    stage_s: dict[str, float] = field(default_factory=dict)  # the same for each stage: judge, asr
    audio_s: float = 0.0
    # CPU seconds of this process over the run (the run as a whole only: its tasks overlap), and the parts of
    # it that were a backend's own generate() calls or episodes synthesized here: the rest is the harness's
    cpu_s: float = 0.0
    model_cpu_s: float = 0.0
    synthesis_cpu_s: float = 0.0
    samples: int = 0
    cached: int = 0
    errors: int = 0

    def add(self, other: TaskTiming) -> None:
        for name in self.__dataclass_fields__:
            if name == "stage_s":
                for stage, seconds in other.stage_s.items():
                    self.stage_s[stage] = self.stage_s.get(stage, 0.0) + seconds
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def harness_cpu_s(self) -> float | None:
        """CPU the harness itself spent (None where not measured: a task's own block)."""
        return max(0.0, self.cpu_s - self.model_cpu_s - self.synthesis_cpu_s) if self.cpu_s else None

    @property
    def judge_s(self) -> float:
        return self.stage_s.get("judge", 0.0)

    @property
    def asr_s(self) -> float:
        return self.stage_s.get("asr", 0.0)
