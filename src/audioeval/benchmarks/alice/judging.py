"""Reading the judge panel's verdicts for ALICE's three judge roles.

Roles (named in the tasks' `judge:` blocks, templates in tasks/alice/judge/):
    reasoning   does the chain-of-thought response show reasoning?      yes_no       -> CoT format compliance
    answer      does the response's answer match the label?            yes_no       -> CoT SER/GR/MMAU accuracy
    transcript  the ASR transcript, extracted verbatim                  result_text  -> CoT ASR WER

`judgments` is the panel's per-sample list `{role: {judge_id: {"value", "error", ...}}}`, or None when the
run has no judge. With several judges a yes/no verdict is the mean of the judges that answered, and the
transcript comes from the first judge (in `--judge` order) that answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REASONING = "reasoning"
ANSWER = "answer"
TRANSCRIPT = "transcript"


@dataclass(frozen=True)
class Verdict:
    value: Any  # float for yes/no roles, str for the transcript; None when there is none
    status: str  # "ok", "failed" (every judge failed or gave an unparsable reply), "no_judge", "not_asked"
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "failed"


def verdict(judgments: list[dict[str, Any]] | None, index: int, role: str) -> Verdict:
    if judgments is None:
        return Verdict(None, "no_judge")
    per_judge = (judgments[index] or {}).get(role)
    if not per_judge:
        return Verdict(None, "not_asked")
    answered = [j for j in per_judge.values() if j.get("value") is not None]
    errors = "; ".join(f"{jid}: {j.get('error')}" for jid, j in per_judge.items() if j.get("value") is None)
    if not answered:
        return Verdict(None, "failed", errors or "no verdict")
    first = answered[0]["value"]
    if isinstance(first, str):
        return Verdict(first, "ok")
    return Verdict(sum(float(j["value"]) for j in answered) / len(answered), "ok")


def failure_flag(v: Verdict) -> float | None:
    """Per-sample judge failure indicator: 1 failed, 0 answered, None when no judge was asked."""
    if v.status in ("no_judge", "not_asked"):
        return None
    return 1.0 if v.failed else 0.0
