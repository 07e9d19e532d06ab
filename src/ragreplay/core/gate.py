"""The promotion gate, pure: the policy, the three bars of the requirement and an honest decision for each.

Each item of the regression set ends as an :class:`ItemOutcome`: on a *win* the challenger either kept it or
lost it (the judge preferred the champion in both orders), on a *contested* question the judge preferred one side
or neither, and an *open wound* is fixed when the challenger's answer scores ``fixed_score`` or more (or matches
the reviewer's correct answer). :func:`evaluate` turns the outcomes into three bars:

- **wins**: no more than ``allowed_losses`` lost (the lost cases are listed);
- **contested**: the challenger's preference share among decided pairs above ``min_preference``;
- **wounds**: at least ``min_fixed_share`` of the open wounds fixed (the requirement's 20 of 60).

With the ``interval`` rule (default) a share bar passes when its 95% Clopper-Pearson interval lies wholly on
the right side of the threshold, fails when it lies wholly on the wrong side, and is *inconclusive* when it
straddles. The ``point`` rule compares the point estimate with the threshold, as the requirement states it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragreplay.core.compare_stats import clopper_pearson
from ragreplay.core.regset import Stratum

Decision = Literal["pass", "fail", "inconclusive"]
DecisionRule = Literal["interval", "point"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "inconclusive": 2, "error": 3}
"""The gate's exit codes: 0 pass, 1 fail, 2 inconclusive, 3 could not run."""
MOST_ERRORED = 0.5
"""Above this share of errored items a gate could not run whatever its policy: a gate where most items
errored never passes (``max_error_share`` must stay under it)."""


class GatePolicy(BaseModel):
    """The bars a challenger must clear; the defaults are the requirement's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: DecisionRule = "interval"
    confidence: float = Field(0.95, gt=0.5, lt=1)
    allowed_losses: int = Field(0, ge=0)
    """Wins the challenger may lose (the requirement: none)."""
    min_preference: float = Field(0.55, gt=0, lt=1)
    """The challenger's preference share on contested questions must be above this."""
    min_fixed_share: float = Field(20 / 60, gt=0, le=1)
    """Share of open wounds that must be fixed (the requirement: 20 of 60)."""
    fixed_score: float = Field(4.0, ge=1, le=5)
    """A wound is fixed when the challenger's answer scores at least this (mean of the axes)."""
    max_error_share: float = Field(0.2, ge=0)
    """Above this share of items that could not be answered or judged, the gate could not run (exit 3); under
    :data:`MOST_ERRORED` (a gate where most items errored never passes)."""
    min_items: int = Field(1, ge=1)
    """A bar with fewer judged items than this is inconclusive."""

    @field_validator("max_error_share")
    @classmethod
    def _not_most(cls, value: float) -> float:
        if value >= MOST_ERRORED:
            raise ValueError(
                f"max_error_share must be under {MOST_ERRORED:g}: a gate where most items errored never "
                f"passes (got {value:g})"
            )
        return value


def stored_policy(data: Mapping[str, Any]) -> GatePolicy:
    """A policy as a finished gate stored it. One stored before ``max_error_share`` was capped under
    :data:`MOST_ERRORED` keeps its value (:func:`evaluate` caps it), so such a gate can still be re-read."""
    share = data.get("max_error_share")
    if isinstance(share, int | float) and share >= MOST_ERRORED:
        rest = {k: v for k, v in data.items() if k != "max_error_share"}
        return GatePolicy.model_validate(rest).model_copy(update={"max_error_share": float(share)})
    return GatePolicy.model_validate(data)


class ItemOutcome(BaseModel):
    """What the gate found for one item of the set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    stratum: Stratum
    question: str = ""
    winner: Literal["champion", "challenger", "tie"] | None = None
    """The pairwise judge's decision over both orders (an order-inconsistent pair is a tie); None: unscorable."""
    consistent: bool | None = None
    challenger_score: float | None = None
    champion_score: float | None = None
    matches_reference: bool | None = None
    """The challenger's answer judged against the reviewer's correct answer, when the item has one."""
    error: str | None = None

    def lost(self) -> bool:
        """A win the challenger lost: the judge preferred the champion in both orders."""
        return self.winner == "champion" and self.consistent is True

    def fixed(self, fixed_score: float) -> bool | None:
        """A wound the challenger fixed; ``None`` when it cannot tell (no scores and no reference)."""
        if self.matches_reference is not None:
            return self.matches_reference
        if self.challenger_score is None:
            return None
        return self.challenger_score >= fixed_score


class Bar(BaseModel):
    """One bar's figures and decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Literal["wins", "contested", "wounds"]
    description: str
    k: int
    """Successes: wins lost, contested pairs the challenger won, wounds fixed."""
    n: int
    """Items the bar is decided on (judged ones)."""
    value: float | None
    low: float
    high: float
    threshold: float
    decision: Decision
    rule: DecisionRule
    unscored: int = 0
    """Items of the stratum that could not be scored or errored."""
    ties: int = 0
    """Contested pairs neither side won (left out of ``n``)."""
    listed: list[str] = Field(default_factory=list)
    """The keys to look at: lost wins, contested pairs lost, wounds left open."""


class GateVerdict(BaseModel):
    """The gate's answer: the bars, the overall decision and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: Decision | Literal["error"]
    bars: list[Bar]
    reasons: list[str] = Field(default_factory=list)
    n_items: int
    n_errors: int

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 2 inconclusive, 3 could not run."""
        return EXIT_CODES[self.decision]


def decide(
    low: float, high: float, threshold: float, value: float | None, rule: DecisionRule, above: bool
) -> Decision:
    """A share bar's decision. ``above``: the share must exceed ``threshold`` (else it must stay at or below)."""
    if value is None:
        return "inconclusive"
    if rule == "point":
        ok = value > threshold if above else value <= threshold
        return "pass" if ok else "fail"
    if above:
        if low > threshold:
            return "pass"
        if high <= threshold:
            return "fail"
        return "inconclusive"
    if high <= threshold:
        return "pass"
    if low > threshold:
        return "fail"
    return "inconclusive"


def _interval(k: int, n: int, confidence: float) -> tuple[float, float, float | None]:
    if n == 0:
        return 0.0, 1.0, None
    low, high = clopper_pearson(k, n, confidence)
    return low, high, k / n


def wins_bar(items: Sequence[ItemOutcome], policy: GatePolicy) -> Bar:
    """No regression on wins: at most ``allowed_losses`` lost. A count bar (the interval of the loss rate is
    shown for information): it passes or fails, and is inconclusive only when nothing could be judged."""
    judged = [i for i in items if i.error is None and i.winner is not None]
    lost = [i.key for i in judged if i.lost()]
    low, high, value = _interval(len(lost), len(judged), policy.confidence)
    if len(judged) < policy.min_items:
        decision: Decision = "inconclusive"
    else:
        decision = "pass" if len(lost) <= policy.allowed_losses else "fail"
    return Bar(
        name="wins",
        description=f"no regression on wins: at most {policy.allowed_losses} lost",
        k=len(lost),
        n=len(judged),
        value=value,
        low=low,
        high=high,
        threshold=float(policy.allowed_losses),
        decision=decision,
        rule="point",
        unscored=len(items) - len(judged),
        listed=lost,
    )


def contested_bar(items: Sequence[ItemOutcome], policy: GatePolicy) -> Bar:
    """Preference above ``min_preference`` on contested questions, among pairs one side won (ties apart)."""
    decided = [i for i in items if i.error is None and i.winner in ("champion", "challenger")]
    won = [i for i in decided if i.winner == "challenger"]
    low, high, value = _interval(len(won), len(decided), policy.confidence)
    decision = (
        "inconclusive"
        if len(decided) < policy.min_items
        else decide(low, high, policy.min_preference, value, policy.rule, above=True)
    )
    return Bar(
        name="contested",
        description=f"challenger preferred on more than {policy.min_preference:.0%} of contested questions",
        k=len(won),
        n=len(decided),
        value=value,
        low=low,
        high=high,
        threshold=policy.min_preference,
        decision=decision,
        rule=policy.rule,
        unscored=sum(1 for i in items if i.error is not None or i.winner is None),
        ties=sum(1 for i in items if i.error is None and i.winner == "tie"),
        listed=[i.key for i in decided if i.winner == "champion"],
    )


def wounds_bar(items: Sequence[ItemOutcome], policy: GatePolicy) -> Bar:
    """At least ``min_fixed_share`` of the open wounds fixed. The point rule is the requirement's literal one:
    ``ceil(share * n_wounds)`` fixed (20 of 60); the interval rule asks the share's interval to clear it."""
    judged = [(i, i.fixed(policy.fixed_score)) for i in items if i.error is None]
    scored = [(i, f) for i, f in judged if f is not None]
    fixed = [i for i, f in scored if f]
    low, high, value = _interval(len(fixed), len(scored), policy.confidence)
    if len(scored) < policy.min_items:
        decision: Decision = "inconclusive"
    elif policy.rule == "point":
        needed = math.ceil(policy.min_fixed_share * len(items) - 1e-9)
        decision = "pass" if len(fixed) >= needed else "fail"
    else:
        # "at least" the share: the interval must reach it from above
        decision = decide(low, high, policy.min_fixed_share - 1e-12, value, "interval", above=True)
    return Bar(
        name="wounds",
        description=f"at least {policy.min_fixed_share:.0%} of open wounds fixed (score >= {policy.fixed_score:g})",
        k=len(fixed),
        n=len(scored),
        value=value,
        low=low,
        high=high,
        threshold=policy.min_fixed_share,
        decision=decision,
        rule=policy.rule,
        unscored=len(items) - len(scored),
        listed=[i.key for i, f in scored if not f],
    )


def evaluate(
    outcomes: Sequence[ItemOutcome], policy: GatePolicy, local_judge_accepted: bool = True
) -> GateVerdict:
    """The three bars and the overall decision: fail if any bar fails, else inconclusive if any is, else pass.

    More than ``max_error_share`` of the items errored (and always more than half, whatever the policy
    says: a policy built without validation, or stored before the cap) makes it ``error`` (could not run).
    ``local_judge_accepted=False`` (a local judge the user did not accept) makes a pass or a fail inconclusive.
    """
    by_stratum = {s: [o for o in outcomes if o.stratum == s] for s in ("win", "contested", "wound")}
    bars = [
        wins_bar(by_stratum["win"], policy),
        contested_bar(by_stratum["contested"], policy),
        wounds_bar(by_stratum["wound"], policy),
    ]
    n_errors = sum(1 for o in outcomes if o.error is not None)
    reasons: list[str] = []
    if not outcomes:
        return GateVerdict(
            decision="error", bars=bars, reasons=["the set has no items"], n_items=0, n_errors=0
        )
    limit = min(policy.max_error_share, MOST_ERRORED)
    if n_errors / len(outcomes) > limit:
        reasons.append(
            f"{n_errors} of {len(outcomes)} items could not be answered or judged "
            f"(more than {limit:.0%}): the gate could not run"
        )
        return GateVerdict(
            decision="error", bars=bars, reasons=reasons, n_items=len(outcomes), n_errors=n_errors
        )
    decisions = {b.decision for b in bars}
    overall: Decision = (
        "fail" if "fail" in decisions else "inconclusive" if "inconclusive" in decisions else "pass"
    )
    for bar in bars:
        if bar.decision != "pass":
            reasons.append(f"{bar.name}: {bar.decision}")
    if not local_judge_accepted:
        reasons.append(
            f"the bars say {overall}, but the judge is the local pairwise judge, which is weak on data it was "
            "not tuned on: the gate stays inconclusive. Pass --accept-local-judge to let it decide, or use an "
            "LLM judge"
        )
        overall = "inconclusive"
    return GateVerdict(decision=overall, bars=bars, reasons=reasons, n_items=len(outcomes), n_errors=n_errors)


GRADUATE_AFTER = 3
"""A wound fixed in this many consecutive finished gates graduates to a win in the next regression set."""


def graduated(history: Sequence[ItemOutcome], after: int = GRADUATE_AFTER, fixed_score: float = 4.0) -> bool:
    """Was this wound fixed in each of its last ``after`` gates (oldest first in ``history``)? A gate where
    it was not judged a wound, errored or could not be scored breaks the run."""
    if after < 1 or len(history) < after:
        return False
    return all(
        o.stratum == "wound" and o.error is None and o.fixed(fixed_score) is True for o in history[-after:]
    )
