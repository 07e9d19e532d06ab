"""Shadow traffic: the champion answers the user while challengers answer the same questions off the user's
path, and every (request, challenger) pair is logged for judging later."""

from ragreplay.shadow.core import AlwaysSample, SamplingPolicy, Shadow, ShadowStats, live_case
from ragreplay.shadow.log import LogStats, ShadowLog, ShadowRowSink
from ragreplay.shadow.privacy import Redactor, default_redactor, hash_user_id, load_redactor
from ragreplay.shadow.types import ShadowAnswer, ShadowRow

__all__ = [
    "AlwaysSample",
    "LogStats",
    "Redactor",
    "SamplingPolicy",
    "Shadow",
    "ShadowAnswer",
    "ShadowLog",
    "ShadowRow",
    "ShadowRowSink",
    "ShadowStats",
    "default_redactor",
    "hash_user_id",
    "live_case",
    "load_redactor",
]
