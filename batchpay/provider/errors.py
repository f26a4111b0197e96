"""Errors of the payout service, each carrying its evidence.

An error knows the HTTP status (if any), the service's own message, which request it
answered, and whether its outcome is *definite* (nothing happened at the service) or
*ambiguous* (a payout may have been made). Only a payout request can be ambiguous:
reads and quotes have no effect that matters, so every failure of theirs is definite.
``error_from_response`` is the one place that maps a response to an error class.

``message`` is the line a person reads (the service's words, the status and the request);
``service_message`` is the service's text alone. Neither ever holds the API key or a full
URL: requests are named by method and path *template* (``GET /v1/transaction/{id}``).
"""

from __future__ import annotations

import json
import math
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from batchpay import clock
from batchpay.errors import BatchpayError

if TYPE_CHECKING:  # httpx stays out of the import path of `batchpay --help`
    import httpx


class ProviderError(BatchpayError):
    """The service refused a request, failed, or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        definite: bool = True,
        hint: str | None = None,
        service_message: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.method = method
        self.path = path
        self.definite = definite
        self.service_message = service_message

    @property
    def ambiguous(self) -> bool:
        return not self.definite

    @property
    def request(self) -> str:
        return f"{self.method} {self.path}".strip()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, message={self.message!r}, "
            f"request={self.request!r}, definite={self.definite})"
        )


class AuthError(ProviderError):
    """401 or 403: the key is wrong or this address is not allowed. Stops everything."""


class RateLimited(ProviderError):
    """429: nothing happened; wait ``retry_after`` seconds (if the service said) and retry."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServiceError(ProviderError):
    """5xx: definite on reads and quotes, ambiguous on a payout request."""


class ConnectFailed(ProviderError):
    """The request never reached the service (connect error, connect or pool timeout)."""


class ResponseLost(ProviderError):
    """The request left but no answer came (read/write timeout, connection closed)."""


class UnexpectedResponse(ProviderError):
    """An answer the client cannot understand (not JSON, wrong shape)."""


class RequestRejected(ProviderError):
    """A definite 4xx refusal: the service did nothing."""


class QuoteExpired(RequestRejected):
    """400 "Quotes only last for 10 minutes"."""


class InvalidQuote(RequestRejected):
    """422 "Invalid quote ID provided": unknown, expired or already used."""


class InsufficientBalance(RequestRejected):
    """400 "Insufficient wallet balance for transaction"."""


class PayoutListAbsent(RequestRejected):
    """404 on the payout list: the service has no list to read (the provider's current API
    reference no longer shows it), so nothing can be looked up by quote id and no payout
    this journal does not know of can be found."""


# --- the one mapping from a response to an error --------------------------------------

# the service's documented default (endpoints.Paths); the client passes its own setting
PAYOUT_PATH = "/v2/payout"
MAX_MESSAGE_CHARS = 300

HINT_AUTH_401 = (
    "Check BATCHPAY_API_KEY (or api_key in batchpay.toml): it must be the key issued "
    "for this service and environment."
)
HINT_AUTH_403 = (
    "Check BATCHPAY_API_KEY, and ask the provider to add this machine's IP address "
    "to the account's allow-list."
)
HINT_RATE = "The service's rate limit was reached. Lower --max-rps or --concurrency and run again."
HINT_SERVICE_DEFINITE = "The service failed and did nothing. Try again in a few minutes."
HINT_AMBIGUOUS = (
    "The payout may have been made. Do not pay this row by hand: run `batchpay sync` "
    "to find out what happened."
)
HINT_REJECTED = "The service refused the request: correct what its message names and try again."
HINT_BALANCE = "Top up the wallet that is debited, then run the rejected rows again."
HINT_QUOTE = "The quote can no longer be used; batchpay asks for a new one when it runs the row again."
HINT_NO_LIST = ("The service has no payout list at this path: check the `transactions` path "
                "setting, or ask the provider whether the list is offered to this account.")


def error_from_response(
    response: httpx.Response,
    method: str,
    path_template: str,
    *,
    payout_request: bool | None = None,
    list_request: bool = False,
) -> ProviderError:
    """The error for a response that is not a success.

    ``payout_request`` says whether this answered the payout POST (the one request whose
    5xx or garbled answer leaves the outcome in doubt); by default it is inferred from the
    method and the service's default payout path. ``list_request``: it answered the payout list,
    whose 404 means the list itself is absent (not a payout that was not found).
    """
    if payout_request is None:
        payout_request = method.upper() == "POST" and path_template == PAYOUT_PATH
    status = response.status_code
    text = service_message(response)
    where = f"HTTP {status} on {method} {path_template}"
    message = f"{text} ({where})" if text else f"The service answered {where}."
    if not 400 <= status < 600:
        message = f"Unexpected answer: {message}"
    lowered = (text or "").lower()

    def error(cls: type[ProviderError], hint: str | None, *, definite: bool = True,
              **extra: Any) -> ProviderError:
        return cls(message, status=status, method=method, path=path_template,
                   definite=definite, hint=hint, service_message=text, **extra)

    if status in (401, 403):
        return error(AuthError, HINT_AUTH_401 if status == 401 else HINT_AUTH_403)
    if status == 429:
        return error(RateLimited, HINT_RATE, retry_after=retry_after_seconds(response))
    if status >= 500:
        return error(ServiceError, HINT_AMBIGUOUS if payout_request else HINT_SERVICE_DEFINITE,
                     definite=not payout_request)
    if 400 <= status < 500:
        if list_request and status == 404:
            return error(PayoutListAbsent, HINT_NO_LIST)
        if "quotes only last" in lowered:
            return error(QuoteExpired, HINT_QUOTE)
        if "invalid quote id" in lowered:
            return error(InvalidQuote, HINT_QUOTE)
        if "insufficient wallet balance" in lowered:
            return error(InsufficientBalance, HINT_BALANCE)
        return error(RequestRejected, HINT_REJECTED)
    # 1xx/3xx: not an answer this client knows; for a payout nobody can say what happened
    return error(UnexpectedResponse, HINT_AMBIGUOUS if payout_request else None,
                 definite=not payout_request)


def service_message(response: httpx.Response) -> str | None:
    """The service's own words from either error shape, shortened to one line.

    Shapes: a JSON string (``"Invalid API key"``), plain text, or
    ``{"message": ..., "status": "failed"}``. An HTML error page says nothing useful.
    """
    raw = response.content.decode("utf-8", errors="replace").strip()
    if not raw:
        return response.reason_phrase or None
    text: str | None = raw
    try:
        parsed = json.loads(raw)
    except ValueError:
        if raw.startswith("<"):  # a proxy's HTML page
            text = response.reason_phrase or None
    else:
        if isinstance(parsed, str):
            text = parsed
        elif isinstance(parsed, dict):
            found = parsed.get("message") or parsed.get("error") or parsed.get("detail")
            text = str(found) if found else response.reason_phrase or None
    if text is None:
        return None
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date; None if absent or bad."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - clock.now()).total_seconds()
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)
