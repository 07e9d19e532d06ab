"""Judge versions: which judge made a decision, precisely enough that a changed judge is a new version.

A :class:`JudgeVersion` is the judge's name, the model behind it, the sha256 of its prompt template text (for a
local judge, of its packaged model file) and the set of axes it scores. Its :attr:`~JudgeVersion.id` is a hash of
those four, so editing one word of the prompt, swapping the model or adding an axis makes another version,
whatever the hand-kept ``prompt_version`` string says. Decisions stored before versions were recorded carry only
the judge's name and ``prompt_version``: :func:`legacy_judge_version` keys them by that string instead of a
prompt hash (so they never collide with a version whose prompt is known).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ragreplay.core.ids import content_hash

LEGACY_PROMPT = "unknown:"
"""Prefix of the prompt hash of a legacy version: what follows is the judge's ``prompt_version``."""


@dataclass(frozen=True)
class JudgeVersion:
    """One judge version: ``judge`` (its name in reports), ``model`` (``provider:model``, or the local judge's
    name), ``prompt_sha256`` (hex sha256 of the prompt template text) and ``axes`` (sorted axis names);
    ``prompt_version`` is the judge's own short version string, kept for display only."""

    judge: str
    model: str
    prompt_sha256: str
    axes: tuple[str, ...]
    prompt_version: str = ""

    @property
    def id(self) -> str:
        """``jv_`` and a hash of judge, model, prompt hash and axes: the key every judgment is stored under."""
        return "jv_" + content_hash([self.judge, self.model, self.prompt_sha256, list(self.axes)], 16)

    @property
    def label(self) -> str:
        """``judge@prompt_version`` (the prompt hash's first 12 characters when there is no version string)."""
        return f"{self.judge}@{self.prompt_version or self.prompt_sha256[:12]}"


def judge_version(
    judge: str, model: str, prompt_text: str, axes: Iterable[str], prompt_version: str = ""
) -> JudgeVersion:
    """The version of a judge named ``judge`` on ``model`` whose prompt template text is ``prompt_text`` and who
    scores ``axes`` (their order does not matter)."""
    digest = hashlib.sha256(prompt_text.encode("utf-8")).hexdigest()
    return JudgeVersion(judge, model, digest, tuple(sorted(set(axes))), prompt_version)


def legacy_judge_version(judge: str, prompt_version: str) -> JudgeVersion:
    """The version of a decision stored with only its judge's name and ``prompt_version``."""
    return JudgeVersion(judge, judge, LEGACY_PROMPT + prompt_version, (), prompt_version)
