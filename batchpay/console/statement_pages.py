"""The reading pages of the month's money: History for everyone, the Statement and the books
for its readers (the auditor, the approver, the owner: `statement.may_read_statement`):

    GET  /history (?from=&to=), /history.csv     the batches and runs, their money
    GET  /statement?from=&to=, /statement/workbook?from=&to=
    GET  /statement/books/{format}?from=&to=, /statement/reconcile?from=&to=,
         /statement/reconciliation?from=&to=

What each shows is made by `statement` and `books` with the library's calls (those of
`batchpay runs`, `statement`, `export` and `reconcile`); a file made for one request is
removed once it is sent.
"""

from __future__ import annotations

import shutil
from typing import Any

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from batchpay.console import books, work
from batchpay.console import statement as audit
from batchpay.console.page import Caller, Console, attachment, render


async def history(request: Request, console: Console, caller: Caller) -> Response:
    return render(console, request, "history.html", caller,
                  **await history_view(request, console))


async def history_view(request: Request, console: Console) -> dict[str, Any]:
    period = audit.span_of(request.query_params, console.settings.time_zone)
    found = await run_in_threadpool(work.history, console.settings, console.batches)
    return await run_in_threadpool(audit.history_money, console.settings, dict(found), period)


async def history_download(request: Request, console: Console, caller: Caller) -> Response:
    view = await history_view(request, console)
    name = "-".join(["history", *(str(d) for d in (view["period"].start, view["period"].end)
                                  if d is not None)]) + ".csv"
    return Response(audit.history_csv(view).encode("utf-8-sig"),
                    media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


def require_statement_reader(caller: Caller) -> None:
    if not audit.may_read_statement(caller.user.roles):
        raise HTTPException(403, "The statement is for auditors, approvers and the owner; "
                                 f"{caller.user.name} has {', '.join(caller.user.roles)}.")


async def statement_page(request: Request, console: Console, caller: Caller) -> Response:
    """The form; once From and To are given, the period's totals per currency."""
    require_statement_reader(caller)
    period = audit.span_of(request.query_params, console.settings.time_zone)
    asked = period.start is not None or period.end is not None
    made = (await run_in_threadpool(audit.statement, console.settings, period)
            if asked else None)
    return render(console, request, "statement.html", caller, period=period, asked=asked,
                  statement=made, totals=audit.total_lines(made) if made else [])


async def statement_download(request: Request, console: Console, caller: Caller) -> Response:
    require_statement_reader(caller)
    period = audit.span_of(request.query_params, console.settings.time_zone)
    path, folder = await run_in_threadpool(audit.statement_workbook, console.settings, period)
    return FileResponse(path, filename=path.name,
                        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True))


async def books_download(request: Request, console: Console, caller: Caller) -> Response:
    """One export of the period, as `batchpay export --format` writes it."""
    require_statement_reader(caller)
    period = audit.span_of(request.query_params, console.settings.time_zone)
    made = await run_in_threadpool(books.export_file, console.settings, period,
                                   request.path_params["format"])
    return sent(made)


async def reconcile_page(request: Request, console: Console, caller: Caller) -> Response:
    """The Statement page with the period's reconciliation against the service's list."""
    require_statement_reader(caller)
    period = audit.span_of(request.query_params, console.settings.time_zone)
    made = await run_in_threadpool(audit.statement, console.settings, period)
    found, written = await run_in_threadpool(books.reconcile, console.settings, period)
    books.removed(written)()  # the page shows the counts; its link writes the workbook anew
    return render(console, request, "statement.html", caller, period=period, asked=True,
                  statement=made, totals=audit.total_lines(made) if made else [],
                  reconciled=found)


async def reconcile_download(request: Request, console: Console, caller: Caller) -> Response:
    require_statement_reader(caller)
    period = audit.span_of(request.query_params, console.settings.time_zone)
    _, written = await run_in_threadpool(books.reconcile, console.settings, period)
    return sent(written)


def sent(made: books.Download) -> Response:
    return FileResponse(made.path, content_disposition_type="attachment",
                        headers={"Content-Disposition": attachment(made.path.name)},
                        background=BackgroundTask(books.removed(made)))
