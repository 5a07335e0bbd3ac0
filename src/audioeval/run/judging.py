"""LLM judges: one or more judge backends scoring responses with a task's judge templates.

A task enables judging with a `judge:` block in its YAML:

    judge:
      roles:
        reasoning: {template: judge/reasoning.jinja, verdict: yes_no}
        holistic:  {template: judge/holistic.jinja,  verdict: score_0_10, swap: true}
        when: ...            # optional, per role: a Jinja condition on the sample; false -> role not asked

A judge template is a whole-prompt template (`{{ turn("system") }}...{{ turn("user") }}...`) rendered with
`response`, `target`, `sample` (task, k, episode, metadata), `episode`, `query` and, for `swap: true`
roles, `swapped` (False, then True: the template exchanges the reference and the response). Judge requests
are text-only Requests that go through the same serving path as model requests (serving.py: the response
cache keyed by the judge's identity, in-run deduplication, caching as replies arrive), so a rerun never pays
for a judgment already made. Each sample is judged the moment its response arrives, by every judge at once.
A judge endpoint that goes down (api_client.EndpointDown) fails its remaining verdicts at once; the model
side carries on, and the run reports the endpoint at the end.

Per sample, metrics receive `judgments[i] = {role: {judge_id: {"value", "values", "raw", "error"}}}`
(`value` None means a judge failure: API error, unparsable verdict or a number outside the verdict's scale;
swapped roles average both orders and fail if either fails; `out_of_range` says whether a verdict was
outside the scale). Samples a role does not apply to have no entry for it. Per sample, the judges appear in
the order they were given (`--judge` order).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from audioeval.config.judge_roles import JudgeRole
from audioeval.config.template_bounds import TemplateBoundError, evaluate_bounded
from audioeval.config.templates import render_failure, template_view
from audioeval.config.verdicts import OutOfRange
from audioeval.errors import ConfigError, UsageError
from audioeval.models.api.client import EndpointDown
from audioeval.models.base import Model
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.registry import create_model
from audioeval.results.scoring import Judgments, SampleToScore
from audioeval.run.cache import ResponseStore
from audioeval.run.prepared import PreparedTask
from audioeval.run.serving import Server
from audioeval.run.stages import Sample, Stage
from audioeval.types import Request, RequestId, Response

log = logging.getLogger("audioeval")
# --judge_args keys that set the judge's sampling instead of configuring its backend
JUDGE_SAMPLING_KEYS = ("temperature", "reasoning_effort", "seed", "top_p")


@dataclass
class Judge:
    judge_id: str
    model: Model
    sampling: dict[str, Any]  # merged into every judge request (temperature=none: send no temperature)


def _data_bound(err: ConfigError) -> str:
    """Why a sample cannot be judged when its own data took a judge prompt past a rendering bound; any other
    error is the template's own and is raised again (every sample would fail the same way)."""
    if not isinstance(err.__cause__, TemplateBoundError):
        raise err
    return f"its judge prompt went past a rendering bound: {err.__cause__}"


class JudgePanel(Stage):
    """The judges as a stage of the run: each answer of a judged task is judged the moment it arrives."""

    name = "judge"

    def __init__(self, judges: list[Judge], roles_by_task: dict[str, list[JudgeRole]]) -> None:
        self.judges = judges
        self.roles_by_task = roles_by_task
        self.servers: dict[str, Server] = {}  # judge id -> its serving path (set by attach_cache)
        self.failed_verdicts: dict[str, int] = {}  # (sample, role) verdicts that failed, per judge
        self._said_unjudged = False  # a sample whose prompt went past a bound was warned about
        self.out_of_range_verdicts: dict[str, int] = {}  # of those, failed by a number outside the scale
        # of those, failed although every judge reply arrived (no verdict in it, or one outside the scale): the
        # replies are cached, so a rerun reads the same verdicts
        self.unreadable_verdicts: dict[str, int] = {}
        self.down: dict[str, str] = {}  # judge id -> why its endpoint was declared down

    @classmethod
    def create(
        cls, names: list[str], args: list[dict[str, Any]], roles_by_task: dict[str, list[JudgeRole]]
    ) -> JudgePanel:
        """roles_by_task: the judge roles of each judged task (judges/roles.py load_roles)."""
        judges: list[Judge] = []
        seen: set[str] = set()
        for i, (name, judge_args) in enumerate(zip(names, args, strict=True)):
            judge_args = dict(judge_args)
            label = str(
                judge_args.pop("id", None) or judge_args.get("model") or judge_args.get("pretrained") or name
            )
            label = label if label not in seen else f"{label}#{i + 1}"
            seen.add(label)
            sampling = {"temperature": 0.0}
            sampling.update({k: judge_args.pop(k) for k in JUDGE_SAMPLING_KEYS if k in judge_args})
            try:
                model = create_model(name, judge_args, batch_size=1, seed=0)
            except Exception as err:
                raise UsageError(f"--judge {name} (judge {i + 1}): {err}") from err
            judges.append(Judge(label, model, sampling))
        if not roles_by_task:
            log.warning("--judge given, but none of the selected tasks uses a judge")
        return cls(judges, roles_by_task)

    def attach_cache(self, cache: ResponseStore) -> None:
        self.servers = {
            j.judge_id: Server(j.model, cache, kind="judge", identity={"judge": j.model.identity})
            for j in self.judges
        }

    def applies(self, task: PreparedTask) -> bool:
        return bool(task.config.judge)

    @property
    def max_in_flight(self) -> int:
        return sum(j.model.max_in_flight for j in self.judges)

    def busy_now(self) -> float:
        return sum(j.model.stats.busy_now() for j in self.judges)

    def endpoints(self) -> dict[str, EndpointStats]:
        return {f"judge {j.judge_id}": j.model.stats for j in self.judges}

    async def finish(self, sample: Sample) -> None:
        sample.judge_ids = [j.judge_id for j in self.judges]
        response = sample.response
        if response is None or not response.ok:
            return
        scored = SampleToScore(response.text or "", sample.target, sample.request.info["sample_info"])
        sample.judgments = await self.judge_sample(sample.task, sample.request, scored)
        sample.blocks["judgments"] = sample.judgments

    def describe(self) -> dict[str, Any]:
        out = {}
        for j in self.judges:
            stats = j.model.stats
            out[j.judge_id] = {
                "identity": j.model.identity,
                "requests_sent": stats.requests,
                "failed_verdicts": self.failed_verdicts.get(j.judge_id, 0),
                "out_of_range_verdicts": self.out_of_range_verdicts.get(j.judge_id, 0),
                "unreadable_verdicts": self.unreadable_verdicts.get(j.judge_id, 0),
                "retries": stats.retries,
                "http_429": stats.http_429,
                "http_5xx": stats.http_5xx,
                "timeouts": stats.timeouts,
                "sampling": j.sampling,
            }
            if j.judge_id in self.down:
                out[j.judge_id]["endpoint_down"] = self.down[j.judge_id]
        return out

    async def aclose(self) -> None:
        for server in self.servers.values():
            await server.close()

    def close(self) -> None:
        for j in self.judges:
            j.model.close()

    # ------------------------------------------------------------------------------------------------------
    async def judge_sample(self, task: PreparedTask, request: Request, sample: SampleToScore) -> Judgments:
        """`{role: {judge_id: {"value", "values", "raw", "error"}}}` for one sample, every judge asked at once."""
        roles = self.roles_by_task.get(task.name, [])
        out: Judgments = {}
        if not roles:
            return out
        context = template_view(self._context(request, sample))  # clips as opaque handles
        applicable: list[JudgeRole] = []  # the roles whose `when:` holds (or could not be told: too big)
        reason = None
        for role in roles:
            try:
                if self._applies(role, context):
                    applicable.append(role)
            except ConfigError as err:
                reason = _data_bound(err)  # raises again when the template itself is wrong
                applicable.append(role)
        plan = [
            (role, swapped) for role in applicable for swapped in ((False, True) if role.swap else (False,))
        ]
        try:
            rendered = (
                [] if reason else [role.messages({**context, "swapped": swapped}) for role, swapped in plan]
            )
        except ConfigError as err:
            reason = _data_bound(err)
        if reason:  # this sample's own data (a huge answer) took a prompt past a bound: unjudged, counted
            return self._unjudged(applicable, reason)
        if not plan:
            return out
        asked = []
        for judge in self.judges:
            judge_requests = [
                Request(
                    messages=messages,
                    gen_kwargs={"max_new_tokens": role.max_tokens, **judge.sampling},
                    rid=RequestId(f"{task.name}:judge:{role.name}", request.rid.shots, request.rid.episode),
                )
                for (role, _swapped), messages in zip(plan, rendered, strict=True)
            ]
            asked.append(self._replies(judge, judge_requests))
        for judge, replies in zip(self.judges, await asyncio.gather(*asked), strict=True):
            self._collect(judge, plan, replies, out)
        return out

    def _unjudged(self, roles: list[JudgeRole], reason: str) -> Judgments:
        """Every role and judge of a sample that could not be put to its judges, failed with the reason."""
        if not self._said_unjudged:
            log.warning("a judged sample is not judged: %s (counted as a judge failure)", reason)
            self._said_unjudged = True
        out: Judgments = {}
        for role in roles:
            for judge in self.judges:
                self.failed_verdicts[judge.judge_id] = self.failed_verdicts.get(judge.judge_id, 0) + 1
                entry = {
                    "value": None,
                    "values": [None],
                    "raw": [None],
                    "error": reason,
                    "out_of_range": False,
                }
                out.setdefault(role.name, {})[judge.judge_id] = entry
        return out

    async def _replies(self, judge: Judge, requests: list[Request]) -> list[tuple[str | None, str | None]]:
        """(reply text, error) per judge request. A judge whose endpoint is down fails the verdicts it owes."""
        futures = self.servers[judge.judge_id].submit(requests)
        replies: list[tuple[str | None, str | None]] = []
        for result in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(result, Response):
                replies.append((result.text, result.error))
            elif isinstance(result, EndpointDown):
                if judge.judge_id not in self.down:
                    log.error("judge %r: %s", judge.judge_id, result)
                    self.down[judge.judge_id] = str(result)
                replies.append((None, "judge endpoint down"))
            else:
                raise result
        return replies

    @staticmethod
    def _applies(role: JudgeRole, context: dict[str, Any]) -> bool:
        if role.when is None:
            return True
        try:
            return bool(evaluate_bounded(role.when, context))
        except Exception as err:  # noqa: BLE001
            raise ConfigError(
                f"judge role {role.name!r}: its `when` condition failed: {render_failure(err)}"
            ) from err

    def _context(self, request: Request, sample: SampleToScore) -> dict[str, Any]:
        episode = request.info.get("episode") or {}
        return {
            "response": sample.response,
            "target": sample.target,
            "sample": sample.info,
            "episode": episode,
            "query": episode.get("query") or {},
            "metadata": episode.get("metadata") or {},
            "params": (sample.info or {}).get("params") or {},
            "k": (sample.info or {}).get("k"),
        }

    def _collect(
        self,
        judge: Judge,
        plan: list[tuple[JudgeRole, bool]],
        replies: list[tuple[str | None, str | None]],
        out: Judgments,
    ) -> None:
        grouped: dict[str, list[tuple[JudgeRole, str | None, str | None]]] = {}
        for (role, _swapped), (text, error) in zip(plan, replies, strict=True):
            grouped.setdefault(role.name, []).append((role, text, error))
        for role_name, items in grouped.items():
            role = items[0][0]
            reader = role.read_verdict
            values, raws, errors = [], [], []
            out_of_range = False
            for _role, text, error in items:
                raws.append(text)
                value = reader(text) if text is not None else None
                if error:
                    errors.append(error)
                elif isinstance(value, OutOfRange):
                    errors.append(str(value))
                    out_of_range, value = True, None
                elif value is None:
                    errors.append("unparsable verdict")
                values.append(value)
            failed = any(v is None for v in values)
            if failed:
                self.failed_verdicts[judge.judge_id] = self.failed_verdicts.get(judge.judge_id, 0) + 1
                if not any(error for _role, _text, error in items):
                    self.unreadable_verdicts[judge.judge_id] = (
                        self.unreadable_verdicts.get(judge.judge_id, 0) + 1
                    )
            if out_of_range:
                self.out_of_range_verdicts[judge.judge_id] = (
                    self.out_of_range_verdicts.get(judge.judge_id, 0) + 1
                )
            if failed:
                value = None
            elif any(isinstance(v, str) for v in values):  # a text verdict is kept as given (first order)
                value = values[0]
            else:
                value = sum(float(v) for v in values if isinstance(v, int | float)) / len(values)
            out.setdefault(role_name, {})[judge.judge_id] = {
                "value": value,
                "values": values,
                "raw": raws,
                "error": "; ".join(errors) or None,
                "out_of_range": out_of_range,
            }
