"""A batch's pages and forms, from upload to approval (paying it is payment_pages'):

    GET  /                     batches, and the upload form (maker)
    POST /upload               upload + check
    GET  /template             an empty payout sheet
    GET  /batches/ID           the batch: check, review, approvals, payment, results
                               (?finding=&page=: the table Rows, filtered, a page of it)
    POST /batches/ID/review    the review (the plan), releases of held repeats (maker)
    POST /batches/ID/continue  without the invalid rows | discard (maker)
    POST /batches/ID/approve | signature | reject   the approver's (code, or a signature
                               made with their own key and uploaded; a reason to reject)
    GET  /batches/ID/files/KIND  sheet, checked, plan, planfile, results, unpaid

Each calls one function of `work` (the library's check, plan and approve) and shows its
page; an approval or a rejection is told to whom it concerns (`notices`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from batchpay.console import notices, payment, work
from batchpay.console.batches import DISCARDABLE, Batch, BatchRefused, Stage
from batchpay.console.page import (
    Caller,
    Console,
    attachment,
    back_to,
    batch_for,
    form_text,
    get_batch,
    render,
    require,
)
from batchpay.console.rows import rows_view


async def index(request: Request, console: Console, caller: Caller) -> Response:
    stopped = await run_in_threadpool(payment.stopped, console.settings, console.batches)
    return render(console, request, "index.html", caller, batches=console.batches.all()[:50],
                  stopped=stopped,
                  limit_mb=console.max_upload_bytes / 1024 / 1024,
                  max_rows=console.settings.max_rows,
                  require_approval=console.settings.require_approval)


async def template(request: Request, console: Console, caller: Caller) -> Response:
    from batchpay.engine import write_template

    folder = Path(tempfile.mkdtemp(prefix="batchpay-template-"))
    path = write_template(folder / "payouts-template.xlsx")
    return FileResponse(path, filename="payouts-template.xlsx")


async def upload(request: Request, console: Console, caller: Caller) -> Response:
    require(caller, "maker")
    sheet = request.state.form.get("sheet")
    if sheet is None or isinstance(sheet, str) or not sheet.filename:
        raise BatchRefused("Choose a payout sheet (.xlsx, .xls, .ods or .csv) to upload.")
    data = await sheet.read()
    if not data:
        raise BatchRefused(f"{sheet.filename} is empty.")
    batch = console.batches.create(sheet.filename, data, caller.user.name)
    await run_in_threadpool(work.check, console.settings, console.batches, batch)
    return RedirectResponse(f"/batches/{batch.id}", status_code=303)


async def batch_page(request: Request, console: Console, caller: Caller) -> Response:
    batch = await run_in_threadpool(payment.settle, console.settings, console.batches,
                                    get_batch(console, request))
    review = await run_in_threadpool(work.review_view, console.settings, batch)
    state = (await run_in_threadpool(payment.progress, console.settings, batch)
             if batch.meta.get("pay") or batch.stage == Stage.PAYING else None)
    advices = (await run_in_threadpool(payment.advices_of, console.settings, batch)
               if state else [])
    return render(console, request, "batch.html", caller, batch=batch, advices=advices,
                  quoting=work.review_progress(batch.id),
                  check=work.saved_check(batch), review=review, progress=state,
                  rows=await run_in_threadpool(rows_view, console.settings, batch,
                                               request.query_params),
                  same=console.batches.same_file(batch), reviewable=work.reviewable(batch),
                  discardable=DISCARDABLE,
                  require_approval=console.settings.require_approval)


async def review(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    release = frozenset(v for v in request.state.form.getlist("release") if isinstance(v, str))
    await run_in_threadpool(work.review, console.settings, console.batches, batch,
                            console.accounts, caller.user.name, release=release)
    return back_to(batch, "review")


async def continue_valid(request: Request, console: Console, caller: Caller) -> Response:
    """Continue without the invalid rows: the review and the payment skip them."""
    batch = batch_for(console, request, caller, "maker")
    work.skip_invalid(console.batches, batch, caller.user.name)
    return back_to(batch, "check")


async def discard(request: Request, console: Console, caller: Caller) -> Response:
    """Discard batch: its maker's only, as its review is."""
    batch = batch_for(console, request, caller, "maker")
    work.require_maker(batch, caller.user.name, "discards it")
    console.batches.discard(batch.id, caller.user.name)
    return RedirectResponse("/", status_code=303)


DOWNLOADS: dict[str, Callable[[Batch], Path]] = {
    "sheet": lambda batch: batch.sheet, "checked": lambda batch: batch.checked,
    "plan": lambda batch: batch.plan_files.workbook,
    "planfile": lambda batch: batch.plan_files.plan,
    "results": lambda batch: batch.latest_results}


async def download(request: Request, console: Console, caller: Caller) -> Response:
    batch = get_batch(console, request)
    kind = request.path_params["kind"]
    if kind == "unpaid":  # written when asked for, from the journal
        path = await run_in_threadpool(payment.write_unpaid, console.settings, batch)
    elif kind in DOWNLOADS:
        path = DOWNLOADS[kind](batch)
    else:
        raise HTTPException(404, "No such file.")
    if path is None or not path.is_file():
        raise HTTPException(404, "This file is not there yet.")
    return FileResponse(path, content_disposition_type="attachment", headers={
        "Content-Disposition": attachment(batch.download_name(path))})


async def approve(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    form = request.state.form
    done = await run_in_threadpool(work.approve, console.settings, console.batches, batch,
                                   console.accounts, caller.user.name,
                                   work.Shown(form_text(form.get("plan")),
                                              form_text(form.get("code"))))
    await run_in_threadpool(notices.batch_approved, console.settings, done, caller.user.name)
    return back_to(batch, "approvals")


async def signature(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    upload = request.state.form.get("signature")
    text = form_text(request.state.form.get("signature_text"))
    if upload is not None and not isinstance(upload, str):
        text = (await upload.read(64 * 1024)).decode("utf-8", "replace") or text
    done = await run_in_threadpool(work.approve_with_signature, console.settings,
                                   console.batches, batch, console.accounts, caller.user.name,
                                   text)
    await run_in_threadpool(notices.batch_approved, console.settings, done, caller.user.name)
    return back_to(batch, "approvals")


async def reject(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    form = request.state.form
    done = work.reject(console.batches, batch, caller.user.name,
                       form_text(form.get("reason")), form_text(form.get("plan")))
    await run_in_threadpool(notices.batch_rejected, console.settings, done)
    return back_to(batch, "approvals")
