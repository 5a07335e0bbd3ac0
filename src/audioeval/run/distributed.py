"""Process topology. Under `accelerate launch` every rank evaluates a deterministic slice of the episodes;
rank 0 merges, aggregates and writes. Without a launcher this is a single process."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from audioeval.errors import AudioEvalError, OtherRankFailed


@dataclass
class Topology:
    rank: int
    world_size: int
    _state: Any = None
    #: whether the process group belongs to this run (a CLI run under `accelerate launch`), which then tears it
    #: down at its end; a group that was there before (a training script's) is left as it is
    owned: bool = True

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            self._state.wait_for_everyone()

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order, on every rank."""
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's `obj` on every rank."""
        if self.world_size == 1:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        """Tear the process group down on this rank. A rank that exits with a live gloo group can abort
        ("terminate called without an active exception") while another rank is still writing, and the
        launcher then kills every rank."""
        if self.world_size == 1 or not self.owned:
            return
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()

    @property
    def device(self) -> Any:
        return self._state.device if self._state is not None else None


def close_process_group() -> None:
    """Tear the process group down, if there is one (the command line, once every rank has its result): a rank
    that exits with a live gloo group can abort while another rank is still writing."""
    if not launched_with_multiple_processes():
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def launched_with_multiple_processes() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_topology(keep_group: bool = False) -> Topology:
    """Start the process group when launched with several processes (GPU or CPU), or join the one the process
    has already (a training script's). With `keep_group` (Python callers, who may evaluate again) the run
    never tears the group down."""
    if not launched_with_multiple_processes():
        return Topology(rank=0, world_size=1)
    import torch
    import torch.distributed as dist
    from accelerate import PartialState
    from accelerate.utils import InitProcessGroupKwargs  # noqa: F401  (documents the timeout knob)

    existing = dist.is_available() and dist.is_initialized()
    # Uneven generation lengths can leave ranks waiting a long time at a gather; give them a year.
    kwargs = {} if existing else {"timeout": timedelta(days=365)}
    state = PartialState(cpu=not torch.cuda.is_available(), **kwargs)
    owned = not (existing or keep_group)
    return Topology(rank=state.process_index, world_size=state.num_processes, _state=state, owned=owned)


def collectively(
    topology: Topology, step: Callable[[], Any], what: str | Callable[[], str], gather: bool = True
) -> Any:
    """Run `step` on every rank. With `gather`, return every rank's result in rank order (on every rank);
    without, this rank's own result (for results that must not travel, such as a loaded model). `what` says
    what the step was doing (a function: asked on the failing rank after it failed, e.g. which task).

    If it raised on any rank, every rank raises: the failing rank its own error, the others OtherRankFailed
    naming which rank failed and why. Without this, a rank that fails alone (a template error on its own
    episodes, out of memory on its own GPU) leaves the others waiting at the next collective or dying of a
    closed connection, with the real message nowhere."""
    if topology.world_size == 1:
        result = step()
        return [result] if gather else result
    own: BaseException | None = None
    try:
        result, failure = step(), None
    except Exception as err:  # noqa: BLE001 - reported on every rank below, then re-raised here
        own, result = err, None
        message = str(err) if isinstance(err, AudioEvalError) else f"{type(err).__name__}: {err}"
        failure = f"{what() if callable(what) else what}: {message}"
    gathered = topology.gather((result if gather else None, failure))
    failed = [(rank, f) for rank, (_, f) in enumerate(gathered) if f is not None]
    if own is not None:
        raise own
    if failed:
        raise OtherRankFailed(
            "; ".join(f"rank {rank} failed {failure}" for rank, failure in failed)
            + " (that rank prints its own message, prefixed with its rank)."
        )
    return [r for r, _ in gathered] if gather else result
