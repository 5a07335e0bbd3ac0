"""`audioeval build --augment ...`: the degraded episodes written as Hub configs of their own,
`<config>@<condition>`, with exactly the clips a run under the same flags evaluates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from audioeval.augment.episode import augment_episode, check_refusals
from audioeval.augment.plan import AugmentPlan, Condition
from audioeval.errors import UsageError


class DegradedBuilder:
    """Stands in for a builder in `audioeval build`: its episodes (and so its rows) carry the condition;
    everything else is the builder's own."""

    def __init__(self, builder: Any, condition: Condition) -> None:
        self._builder, self._condition, self._episodes_made = builder, condition, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._builder, name)

    def episode(self, index: int) -> dict[str, Any]:
        self._episodes_made += 1
        return augment_episode(self._builder.episode(index), self._condition, self._builder)

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
        # the builder's own generator, run with this object as `self` so that it makes degraded episodes
        for n, item in enumerate(type(self._builder)._generate_examples(self, **kwargs)):
            if n == 0 and not self._episodes_made:
                raise UsageError(
                    f"--augment: config {self._builder.config.name!r} writes rows that are not episodes (e.g. a "
                    "pool of source items), so there are no clips to degrade; leave it out of --configs."
                )
            yield item


def degraded_builders(builders: dict[str, Any], plan: AugmentPlan | None) -> dict[str, Any]:
    """{config name: builder} -> {"<config>@<condition>": builder} for every condition."""
    if plan is None:
        return builders
    out = {}
    for name, builder in builders.items():
        check_refusals(builder, plan, f"config {name!r}")
        for condition in plan.conditions:
            out[condition.task_name(name)] = DegradedBuilder(builder, condition)
    return out
