"""The `ragreplay` command line."""

from __future__ import annotations

import sys

import click
import typer
from rich.text import Text

from ragreplay.cli import demo_cmd, ingest_cmd, report_cmd, run_cmd, schema_cmd
from ragreplay.cli.common import err_console
from ragreplay.errors import RagreplayError

app = typer.Typer(
    name="ragreplay",
    help="Tell whether a new RAG configuration beats production, using the feedback you already have.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(ingest_cmd.ingest)
app.command()(run_cmd.run)
app.command()(report_cmd.report)
app.command()(report_cmd.runs)
app.command()(report_cmd.sources)
app.command()(demo_cmd.demo)
app.command()(schema_cmd.schema)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user mistakes print a clear message and exit 2, never a traceback."""
    try:
        result = app(args=argv, standalone_mode=False)
    except RagreplayError as exc:
        err_console.print(Text("error: ", style="red") + Text(str(exc)), highlight=False)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
