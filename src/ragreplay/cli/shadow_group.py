"""`ragreplay shadow`: its commands, each imported when used (see :mod:`ragreplay.cli.lazy`).

Only the commands that serve HTTP (``serve``, ``dashboard``, ``demo``) need the server stack of the
``[shadow]`` extra; ``judge``, ``report``, ``feedback`` and ``purge`` read and write the store and run on the
base install.
"""

from __future__ import annotations

import typer

from ragreplay.cli.lazy import SERVER_STACK, LazyCommand, LazyGroup

SHADOW_COMMANDS = (
    LazyCommand(
        "serve",
        "ragreplay.cli.shadow_cmd:serve",
        (
            "Forward every request to the champion unchanged; shadow a sample to the challengers; counters at "
            "/_shadow/stats; users' feedback via --feedback-path or POST /_shadow/feedback."
        ),
        needs=SERVER_STACK,
    ),
    LazyCommand(
        "judge",
        "ragreplay.cli.shadow_judge_cmd:judge",
        (
            "Judge the shadow rows not judged yet: agreement (FIT judge, champion answer vs candidate) and blind "
            "preference (pairwise judge). Each row is judged once; running it again judges only rows added since."
        ),
    ),
    LazyCommand(
        "report",
        "ragreplay.cli.shadow_judge_cmd:report",
        (
            "The champion-vs-challenger grid of the judged shadow rows: agreement, preference, consistency, "
            "latency, cost, per tag, the failure tags reviewers gave each challenger's rows and, where users rated "
            "the champion's answer, the GOOD/BAD verdict matrix. Calls no model: run `ragreplay shadow judge` "
            "first."
        ),
    ),
    LazyCommand(
        "feedback",
        "ragreplay.cli.shadow_feedback_cmd:feedback",
        (
            "Import live feedback (GOOD/BAD per request id) from a JSONL or CSV file. The whole file is checked "
            "first: a file with any bad line writes nothing. The latest label per request wins, so importing the "
            "same file again changes nothing."
        ),
    ),
    LazyCommand(
        "purge",
        "ragreplay.cli.shadow_purge_cmd:purge",
        (
            "Delete shadow rows older than the cutoff, their judgments, and old feedback labels whose request has "
            "no shadow row left (labels of requests whose rows are kept stay). One transaction: all or nothing. "
            "Asks for confirmation on a terminal; elsewhere needs --yes."
        ),
    ),
    LazyCommand(
        "dashboard",
        "ragreplay.cli.shadow_dashboard_cmd:dashboard",
        (
            "Serve the read-only shadow dashboard: agreement and preference per challenger, the grid, per-tag and "
            "per-day tables, the questions the judge could not score, and every judged row; each page has a JSON "
            "twin (/index.json, /rows.json, /rows/ID.json). Run `ragreplay shadow judge` to add new rows to it."
        ),
        needs=SERVER_STACK,
    ),
    LazyCommand(
        "demo",
        "ragreplay.cli.shadow_demo_cmd:demo",
        (
            "Put the proxy in front of the shipped champion RAG app, shadow every question to the challenger, "
            "feed back the users' logged thumbs through the app's feedback endpoint, judge the log and report."
        ),
        needs=SERVER_STACK,
    ),
)
"""The ``shadow`` commands in listing order, with the first paragraph of each one's help (a test checks it)."""


class ShadowGroup(LazyGroup):
    """``ragreplay shadow``: the :data:`SHADOW_COMMANDS`, each loaded when used."""

    lazy_commands = SHADOW_COMMANDS
    command_path = "ragreplay shadow"


shadow_app = typer.Typer(
    help="Shadow live traffic: challengers answer the same questions off the user's path.", cls=ShadowGroup
)
