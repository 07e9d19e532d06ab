"""Shadow traffic: the champion answers the user while challengers answer the same questions off the user's
path, and every (request, challenger) pair is logged for judging later, with the users' feedback by request id."""

from ragreplay.core.shadow import ShadowAnswer, ShadowFeedback, ShadowRow, live_case
from ragreplay.shadow.library import AlwaysSample, SamplingPolicy, Shadow, ShadowStats
from ragreplay.shadow.log import BatchLog, FeedbackLog, LogStats, ShadowFeedbackSink, ShadowLog, ShadowRowSink
from ragreplay.shadow.privacy import Redactor, default_redactor, hash_user_id, load_redactor

__all__ = [
    "AlwaysSample",
    "BatchLog",
    "FeedbackLog",
    "LogStats",
    "Redactor",
    "SamplingPolicy",
    "Shadow",
    "ShadowAnswer",
    "ShadowFeedback",
    "ShadowFeedbackSink",
    "ShadowLog",
    "ShadowRow",
    "ShadowRowSink",
    "ShadowStats",
    "default_redactor",
    "hash_user_id",
    "live_case",
    "load_redactor",
]
