"""The `ragreplay` command line."""

from __future__ import annotations

import sys

import typer
from rich.text import Text

from ragreplay.cli import root_options
from ragreplay.cli.common import OUTPUT, err_console
from ragreplay.cli.lazy import SERVER_STACK, TYPER_SETTINGS, LazyCommand, LazyGroup
from ragreplay.errors import RagreplayError, missing_extra

COMMANDS = (
    LazyCommand(
        "ingest",
        "ragreplay.cli.ingest_cmd:ingest",
        "Ingest a conversation log. Re-ingesting the same file is a no-op; a bad file writes nothing.",
    ),
    LazyCommand(
        "run",
        "ragreplay.cli.run_cmd:run",
        "Replay labelled cases through a candidate and judge each new answer against the old one.",
    ),
    LazyCommand(
        "report",
        "ragreplay.cli.report_cmd:report",
        (
            "Show a run's verdict matrix, rates with intervals, per-tag rows, the failure tags reviewers gave its"
            " cases and the cases to review."
        ),
    ),
    LazyCommand(
        "runs",
        "ragreplay.cli.report_cmd:runs",
        "List runs, newest first, with their status and versions.",
    ),
    LazyCommand(
        "sources",
        "ragreplay.cli.report_cmd:sources",
        "List ingested sources.",
    ),
    LazyCommand(
        "export",
        "ragreplay.cli.export_cmd:export",
        (
            "Export a run's cases and results, one row a case: the case (question, old answer, feedback, tags), "
            "the replay (question replayed, new answer, chunks, latency, tokens, cost) and the judgment and "
            "verdict."
        ),
    ),
    LazyCommand(
        "demo",
        "ragreplay.cli.demo_cmd:demo",
        (
            "Ingest the shipped production log, replay it through the challenger RAG, judge locally, report; then"
            " a calibration queue of the run reviewed by simulated reviewers (the ground truth) and the judge "
            "calibrated."
        ),
    ),
    LazyCommand(
        "schema",
        "ragreplay.cli.schema_cmd:schema",
        "Print the JSON Schema of a configuration file.",
    ),
    LazyCommand(
        "compare",
        "ragreplay.cli.compare_cmd:compare",
        (
            "Answer the same cases with the champion and each challenger; report agreement (do they reach the "
            "same answer?) and blind judge preference (when they disagree, who wins?), with intervals, per tag, "
            "latency and cost. Every case is saved as it finishes: the same command again resumes (or re-shows) "
            "that comparison."
        ),
    ),
    LazyCommand(
        "compare-report",
        "ragreplay.cli.compare_cmd:compare_report",
        "Show a stored comparison again, from its saved rows: no target nor judge is called.",
    ),
    LazyCommand(
        "comparisons",
        "ragreplay.cli.compare_cmd:comparisons",
        "List stored comparisons, newest first, with their status, sides and judges.",
    ),
    LazyCommand(
        "triage",
        "ragreplay.cli.triage_cmd:triage",
        (
            "Judge the old answer against the new one for every BAD_NO_FIT case of a run (blind, both orders by "
            "default) and list them as likely fixed (new wins), likely worse (old wins) or changed, unclear."
        ),
    ),
    LazyCommand(
        "coverage",
        "ragreplay.cli.diagnosis_cmd:coverage",
        (
            "Does any chunk of the corpus hold the key facts of each reference answer? Covered / partly / missing,"
            " and the missing-document candidates with their closest chunks."
        ),
    ),
    LazyCommand(
        "retriever-diff",
        "ragreplay.cli.diagnosis_cmd:retriever_diff",
        (
            "Replay queries through an old and a new retriever configuration (or against the logged chunk ids) "
            "and diff the chunk lists per query (gained, dropped, moved, overlap@k, RBO) and overall."
        ),
    ),
    LazyCommand(
        "gate",
        "ragreplay.cli.gate_cmd:gate",
        (
            "Answer the regression set with the champion and the challenger, judge each pair blind in both "
            "orders, and decide the three bars: no regression on wins, preference above 55% on contested, at "
            "least 20 of 60 open wounds fixed. Exit 0 pass, 1 fail, 2 inconclusive, 3 could not run. Resumable "
            "like every run."
        ),
    ),
    LazyCommand(
        "gate-report",
        "ragreplay.cli.gate_cmd:gate_report",
        "Show a stored gate again from its saved items (no call is made); exits with the gate's code.",
    ),
    LazyCommand(
        "gates",
        "ragreplay.cli.gate_cmd:gates",
        "The history of gates, newest first: set, challenger, status and decision.",
    ),
    LazyCommand(
        "gate-comment",
        "ragreplay.cli.gate_cmd:gate_comment",
        (
            "Post the gate's comment on a GitHub pull request, or edit the one posted before (one comment per PR,"
            " kept up to date). The token comes from $GITHUB_TOKEN."
        ),
    ),
    LazyCommand(
        "gate-demo",
        "ragreplay.cli.gate_demo_cmd:gate_demo",
        (
            "Shadow traffic -> regression set -> gate on the shipped demo, offline; exits with the gate's code (0"
            " pass, 1 fail, 2 inconclusive, 3 could not run)."
        ),
        needs=SERVER_STACK,
    ),
    LazyCommand(
        "shadow",
        "ragreplay.cli.shadow_group:shadow_app",
        "Shadow live traffic: challengers answer the same questions off the user's path.",
    ),
    LazyCommand(
        "regset",
        "ragreplay.cli.regset_cmd:regset_app",
        "The regression set: a versioned sample of real questions (wins, contested, open wounds) for the gate.",
    ),
    LazyCommand(
        "review",
        "ragreplay.cli.review_cmd:review_app",
        "Human review: reviewers, review queues, and reviews as JSONL.",
    ),
    LazyCommand(
        "calibration",
        "ragreplay.cli.calibration_cmd:calibration_app",
        (
            "Judge vs human agreement (this command: exit 1 on an alert, 2 on a mistake); `rejudge` the labelled "
            "items with a changed judge, old vs new side by side; the `history` of agreement per judge version."
        ),
    ),
    LazyCommand(
        "eval",
        "ragreplay.cli.eval_cmd:eval_command",
        (
            "Score a dataset: retrieval metrics (rows with judgments), lexical metrics (rows with a reference) and "
            "LLM-judged claim-level faithfulness, correctness, answer and context relevance (one judge call per "
            "row); with --rubric, every criterion of the rubric graded 1-5 (one more call per row); with --repeats "
            "N, all of it N times, and the run-to-run variance; with --rows-per-call N, the claims checks of up "
            "to N rows share a call."
        ),
    ),
    LazyCommand(
        "eval-report",
        "ragreplay.cli.eval_cmd:eval_report",
        "Show a stored eval run again from its saved rows: no model is called.",
    ),
    LazyCommand(
        "eval-diff",
        "ragreplay.cli.eval_diff_cmd:eval_diff",
        (
            "Compare two stored eval runs row by row: for every metric both scored, the rows paired, mean A and B, "
            "B - A with a 95% paired bootstrap interval, a permutation p-value (and Holm's over the metrics) and "
            "effect sizes (Cohen's d_z, rank-biserial); rows on one side only are counted. No model is called."
        ),
    ),
    LazyCommand(
        "evals",
        "ragreplay.cli.eval_cmd:evals",
        "List eval runs, newest first: dataset, judge, rows and status.",
    ),
    LazyCommand(
        "golden",
        "ragreplay.cli.golden_cmd:golden_app",
        "Golden sets: named, versioned questions with their correct answers and the chunks that hold them.",
    ),
    LazyCommand(
        "synth",
        "ragreplay.cli.synth_cmd:synth",
        (
            "Generate test questions from a corpus (single-hop, multi-hop, unanswerable, follow-up) with reference "
            "answers and source chunk ids: a model, or offline templates; saved as a golden set version or JSONL."
        ),
    ),
)
"""Every command, in the order ``ragreplay --help`` lists them, with the first paragraph of its help: a command's
module (and the store, the HTTP clients, the servers it imports) is imported only when that command is used."""


class RootGroup(LazyGroup):
    """``ragreplay``: the root options, then the :data:`COMMANDS`, each loaded when used."""

    lazy_commands = COMMANDS


app = typer.Typer(
    name="ragreplay",
    help="Tell whether a new RAG configuration beats production, using the feedback you already have.",
    cls=RootGroup,
    no_args_is_help=True,
    **{
        **TYPER_SETTINGS,
        "add_completion": True,
    },  # --install-completion / --show-completion (bash, zsh, fish, pwsh)
)
app.callback(epilog=root_options.EXIT_CODES)(root_options.root)


EXIT_STORE_UNAVAILABLE = 75
"""The store stopped answering mid-command (sysexits' EX_TEMPFAIL: try again later); nothing finished is lost."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; user mistakes print a clear message and exit 2, never a traceback.

    Usage errors (unknown option, missing argument) are reported by typer itself, also with exit code 2. A store
    that stops answering mid-command (:class:`StoreUnavailable`) exits 75 with the message: run it again. A
    command that needs an optional package not installed exits 2 naming the extra to install. Any
    other exception exits 1 with a one-line message, or its traceback under ``--verbose``.
    """
    try:
        try:
            app(args=argv, standalone_mode=True)
        except ModuleNotFoundError as exc:  # an optional package's module some path imports without a check
            missing = missing_extra(exc.name or "", "This command")
            if missing is None:
                raise
            raise missing from exc
    except RagreplayError as exc:
        # soft wrap: paths and commands in an error must stay whole to be copied
        err_console.print(Text("error: ", style="red") + Text(str(exc)), highlight=False, soft_wrap=True)
        return EXIT_STORE_UNAVAILABLE if _store_unavailable(exc) else 2
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    except Exception as exc:  # a bug, or a failure nothing names yet: exit 1, as Python's own traceback would
        if OUTPUT.verbose:
            err_console.print_exception()
        else:
            err_console.print(
                Text("error: ", style="red")
                + Text(
                    f"unexpected {type(exc).__name__}: {exc} (ragreplay --verbose ... shows the traceback)"
                ),
                highlight=False,
                soft_wrap=True,
            )
        return 1
    return 0


def _store_unavailable(exc: RagreplayError) -> bool:
    """Whether ``exc`` is the store's :class:`~ragreplay.store.StoreUnavailable`, without importing the store (and
    SQLAlchemy) for a command that never opened one: then it cannot be."""
    failures = sys.modules.get("ragreplay.store.failures")
    return failures is not None and isinstance(exc, failures.StoreUnavailable)


if __name__ == "__main__":
    sys.exit(main())
