"""The `ragreplay` command line."""

from __future__ import annotations

import sys

import typer
from rich.text import Text

from ragreplay.cli import (
    calibration_cmd,
    compare_cmd,
    demo_cmd,
    gate_cmd,
    gate_demo_cmd,
    ingest_cmd,
    regset_cmd,
    report_cmd,
    review_cmd,
    root_options,
    run_cmd,
    schema_cmd,
    shadow_cmd,
    shadow_dashboard_cmd,
    shadow_demo_cmd,
    shadow_feedback_cmd,
    shadow_judge_cmd,
    shadow_purge_cmd,
    triage_cmd,
)
from ragreplay.cli.common import OUTPUT, err_console
from ragreplay.errors import RagreplayError
from ragreplay.store import StoreUnavailable

app = typer.Typer(
    name="ragreplay",
    help="Tell whether a new RAG configuration beats production, using the feedback you already have.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # plain help: rich markup would swallow the "[default: ...]" of every option's help text
    rich_markup_mode=None,
)
app.callback(epilog=root_options.EXIT_CODES)(root_options.root)
app.command()(ingest_cmd.ingest)
app.command()(run_cmd.run)
app.command()(report_cmd.report)
app.command()(report_cmd.runs)
app.command()(report_cmd.sources)
app.command()(demo_cmd.demo)
app.command()(schema_cmd.schema)
app.command()(compare_cmd.compare)
app.command(name="compare-report")(compare_cmd.compare_report)
app.command()(compare_cmd.comparisons)
app.command()(triage_cmd.triage)
app.command()(gate_cmd.gate)
app.command(name="gate-report")(gate_cmd.gate_report)
app.command()(gate_cmd.gates)
app.command(name="gate-comment")(gate_cmd.gate_comment)
app.command(name="gate-demo")(gate_demo_cmd.gate_demo)
shadow_judge_cmd.register(shadow_cmd.shadow_app)
shadow_feedback_cmd.register(shadow_cmd.shadow_app)
shadow_purge_cmd.register(shadow_cmd.shadow_app)
shadow_dashboard_cmd.register(shadow_cmd.shadow_app)
shadow_cmd.shadow_app.command(name="demo")(shadow_demo_cmd.demo)
app.add_typer(shadow_cmd.shadow_app, name="shadow")
app.add_typer(regset_cmd.regset_app, name="regset")
app.add_typer(review_cmd.review_app, name="review")
app.add_typer(calibration_cmd.calibration_app, name="calibration")


EXIT_STORE_UNAVAILABLE = 75
"""The store stopped answering mid-command (sysexits' EX_TEMPFAIL: try again later); nothing finished is lost."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; user mistakes print a clear message and exit 2, never a traceback.

    Usage errors (unknown option, missing argument) are reported by typer itself, also with exit code 2. A store
    that stops answering mid-command (:class:`StoreUnavailable`) exits 75 with the message: run it again. Any
    other exception exits 1 with a one-line message, or its traceback under ``--verbose``.
    """
    try:
        app(args=argv, standalone_mode=True)
    except StoreUnavailable as exc:
        err_console.print(Text("error: ", style="red") + Text(str(exc)), highlight=False, soft_wrap=True)
        return EXIT_STORE_UNAVAILABLE
    except RagreplayError as exc:
        # soft wrap: paths and commands in an error must stay whole to be copied
        err_console.print(Text("error: ", style="red") + Text(str(exc)), highlight=False, soft_wrap=True)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
