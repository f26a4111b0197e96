"""What every command shares: the group, error messages and exit codes, common options.

Heavy libraries (pandas, httpx, starlette) are imported inside the commands, so that
``batchpay --help`` stays fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from batchpay import __version__
from batchpay.errors import DISK_FULL_HINT, BatchpayError
from batchpay.statuses import EXIT_FAILED

if TYPE_CHECKING:
    from batchpay.engine import Journal
    from batchpay.settings.model import Settings

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, hint: str | None = None, code: int = EXIT_FAILED) -> None:
    from batchpay.settings.model import scrub

    click.secho(f"Error: {scrub(message)}", fg="red", err=True)
    if hint:
        click.echo(scrub(hint), err=True)
    sys.exit(code)


def handle_errors(func: F) -> F:
    """Turn every error into one or two lines and an exit code; --debug shows the traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = kwargs.pop("debug", False) or _debug_requested()
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except BatchpayError as exc:
            if debug:
                raise
            fail(exc.message, exc.hint, exc.exit_code)
        except KeyboardInterrupt:
            if debug:
                raise
            fail("Interrupted.", "Nothing is lost: the journal holds every request sent. "
                 "Run the same command again to go on.", EXIT_FAILED)
        except OSError as exc:
            if debug:
                raise
            fail(*_os_error_message(exc))
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if debug:
                raise
            fail(*_lower_level_message(exc))

    return wrapper  # type: ignore[return-value]


def _os_error_message(exc: OSError) -> tuple[str, str]:
    import errno

    if exc.errno == errno.ENOSPC:
        return "The disk is full: batchpay could not write its files.", DISK_FULL_HINT
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}.", "Check the path, free space and permissions."


def _lower_level_message(exc: Exception) -> tuple[str, str]:
    """A library's error that no module turned into a BatchpayError: still one or two lines."""
    library = type(exc).__module__.split(".")[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    if library == "sqlite3":
        if "full" in text.lower():
            return "The disk is full: the journal could not be written.", DISK_FULL_HINT
        return (f"The journal could not be read or written ({text}).",
                "Check that --journal (or BATCHPAY_JOURNAL) points at a batchpay journal, "
                "and the free space and permissions of its folder.")
    if library == "psycopg":
        return (f"The journal's database could not be read or written ({text}).",
                "Check that the database server is up and reachable, then run the same "
                "command again: rows in flight are looked up, never sent twice.")
    if library in ("httpx", "httpcore", "h11", "anyio"):
        return (f"The connection to the payout service failed ({type(exc).__name__}: {text}).",
                "Run the same command again; if a run was paying, first run `batchpay sync` "
                "to learn what happened to rows in doubt.")
    if library in ("zipfile", "openpyxl", "python_calamine", "defusedxml", "xml"):
        return (f"A workbook could not be read ({text}).",
                "Open it in Excel or LibreOffice, save it as a new .xlsx, and try again.")
    if library == "xlsxwriter":
        return (f"A workbook could not be written ({text}).",
                "Check that the folder exists and that you can write there.")
    return (f"Unexpected {type(exc).__name__}: {text}",
            "This is a bug in batchpay. Run again with --debug and report the traceback.")


def writable_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """An output file is checked before anything is sent, not found unwritable afterwards."""
    import os

    from batchpay.errors import UsageError
    from batchpay.files import check_name_fits

    if value is None:
        return value
    try:
        check_name_fits(value)  # before anything looks the path up: the system would refuse it
    except UsageError as exc:
        raise click.BadParameter(f"{exc.message} {exc.hint or ''}".strip()) from None
    folder = value.absolute().parent
    if not folder.is_dir():
        raise click.BadParameter(f"the folder {folder} does not exist: create it, or "
                                 "choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (value.exists()
                                                    and not os.access(value, os.W_OK)):
        raise click.BadParameter(f"you cannot write {value}: choose a path you can write to")
    return value


def _debug_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug"))


def debug_option(func: F) -> F:
    return click.option("--debug", is_flag=True, help="Show the full traceback of an error.")(func)


def settings_for(**options: Any) -> Settings:
    from batchpay.settings.load import load_settings

    return load_settings().with_options(**options)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="batchpay")
@click.option("--debug", is_flag=True, help="Show the full traceback of any error.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Pay a spreadsheet of recipients, one payout per row, exactly once.

    With no BATCHPAY_BASE_URL set, every command uses the embedded sandbox: no real
    money moves until you configure a real service.
    """
    ctx.obj = {"debug": debug}


def sandbox_banner() -> None:
    click.secho("SANDBOX: test data, no real money moves.", fg="yellow", err=True)


overwrite_option = click.option(
    "--overwrite", is_flag=True,
    help="Replace the output file if it exists (default: refuse, before anything is sent).")


decimal_comma_option = click.option(
    "--decimal-comma", is_flag=True,
    help="Amounts written as text use a decimal comma and points for thousands "
    "(1.250.000,00; 12,5). Without it, a comma or a point before three digits in a "
    "';'- or tab-separated CSV is refused as ambiguous.")


encoding_option = click.option(
    "--encoding", metavar="NAME",
    help="The text encoding of a CSV file, e.g. big5, gb18030, utf-16 (default: read by its "
    "byte order mark, else UTF-8, else GB18030; a file that does not read faithfully is "
    "refused).")


include_hidden_option = click.option(
    "--include-hidden", is_flag=True,
    help="Pay rows hidden or filtered out in the sheet too (default: such a row is INVALID).")


quiet_option = click.option("--quiet", is_flag=True,
                            help="Print only errors and the paths written (and --json).")


JOURNAL_HELP = ("The journal file, or a PostgreSQL database postgresql://USER@HOST/DB "
                "(default: a file per service in your user data folder, the same from every "
                "folder; `batchpay config` shows it; or BATCHPAY_JOURNAL).")


def journal_option(func: F) -> F:
    return click.option("--journal", type=str, metavar="PATH|URL",
                        help=JOURNAL_HELP)(func)


def open_journal(journal: str | None) -> Journal:
    from batchpay.engine import Journal

    settings = settings_for(journal=journal)
    return Journal.existing(settings.journal)


def shown_path(path: Path) -> str:
    """A path as the operator would type it: relative to the current folder when inside it."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
