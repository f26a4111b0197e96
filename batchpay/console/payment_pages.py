"""A batch's payment on the page: the forms that start, follow up and resume it, and what
the page reads of it while it runs (paying, and what a payment is, are `payment`'s):

    POST /batches/ID/pay       Pay: `batchpay run` of the sheet, or of the approved plan
    POST /batches/ID/refresh   Refresh statuses: `batchpay sync` of the batch's run
    POST /batches/ID/resume    a stopped payment resumed, from the journal
    GET  /batches/ID/progress  the payment as the journal holds it (JSON); /events: the same
                               as server-sent events until the run is final

The forms are the maker's; progress and events need a session, as every page does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from batchpay.console import payment, work
from batchpay.console.page import Caller, Console, back_to, batch_for, form_text, get_batch
from batchpay.engine import mask_ids

EVENT_SECONDS = 1.0  # how often the progress stream reads the journal


async def pay(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    form = request.state.form
    await run_in_threadpool(payment.pay, console.settings, console.batches, batch,
                            console.accounts, caller.user.name,
                            work.Shown(form_text(form.get("plan")),
                                       confirmed=form.get("confirm") == "yes"))
    return back_to(batch, "progress")


async def refresh(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    await run_in_threadpool(payment.refresh, console.settings, console.batches, batch)
    return back_to(batch, "progress")


async def resume(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    await run_in_threadpool(payment.resume, console.settings, console.batches, batch,
                            console.accounts, caller.user.name,
                            work.Shown(form_text(request.state.form.get("plan"))))
    return back_to(batch, "progress")


async def progress(request: Request, console: Console, caller: Caller) -> Response:
    batch = await run_in_threadpool(payment.settle, console.settings, console.batches,
                                    get_batch(console, request))
    state = await run_in_threadpool(payment.progress, console.settings, batch)
    # (not ASCII-escaped: an ID after an escaped letter would not stand alone to be masked)
    return Response(mask_ids(json.dumps(state, default=str, ensure_ascii=False)),
                    media_type="application/json")


async def events(request: Request, console: Console, caller: Caller) -> Response:
    """The payment's progress as server-sent events, one per change, until it is final."""
    from sse_starlette import EventSourceResponse

    batch_id = request.path_params["id"]
    get_batch(console, request)

    async def stream() -> AsyncIterator[dict[str, str]]:
        last = None
        while True:
            batch = console.batches.get(batch_id)
            assert batch is not None
            started = time.monotonic()
            batch = await run_in_threadpool(payment.settle, console.settings, console.batches,
                                            batch)
            state = await run_in_threadpool(payment.progress, console.settings, batch)
            spent = time.monotonic() - started
            text = mask_ids(json.dumps(state, default=str, ensure_ascii=False))
            if text != last:
                yield {"event": "progress", "data": text}
                last = text
            if (state["finished"] or state.get("stopped") or not batch.meta.get("pay")
                    or await request.is_disconnected()):
                return  # final, stopped, or no payment to follow (not started, freed again)
            user = console.accounts.get(caller.user.name)
            if user is None or user.generation != caller.session.generation:
                console.sessions.end(caller.session.id)
                return  # the user was changed or removed: their session is over
            # a large run takes a while to read: the journal is read at most a third
            # of the time, so pages left open never slow the payment down
            await asyncio.sleep(max(EVENT_SECONDS, 2 * spent))

    return EventSourceResponse(stream(), ping=15)
