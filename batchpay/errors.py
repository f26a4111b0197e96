"""The one error tree of batchpay.

Every error a user can cause is a ``BatchpayError``; the CLI turns it into one or two
lines (what happened, what to do) and an exit code. Lower-level errors (httpx, sqlite3,
openpyxl, zipfile) are caught where they happen and re-raised as one of these, so none
escapes the CLI as a traceback.

    BatchpayError                      exit 2 unless a subclass says otherwise
    ├── UsageError                     a bad option or a combination that cannot work
    ├── ConfigError                    settings file or environment cannot be used
    ├── InputError                     the sheet cannot be read at all (not a row problem)
    ├── Interrupted                    Ctrl-C during a run: what was done so far is kept
    ├── ResultsNotWritten              exit 1: rows were paid, their workbook not written
    ├── AdviceError                    a remittance advice cannot be made or mailed at all
    ├── JournalError                   the journal cannot be opened or written
    │   ├── JournalLocked              another run/rerun holds the journal
    │   ├── AlreadySent                another run made this row's payout request first
    │   ├── JournalServiceMismatch     the journal belongs to another service
    │   ├── JournalTampered            its tables disagree with its hash chain
    │   └── SigningKeyLocked           a console signing key in the team's database
    │                                  cannot be opened here (no chain key, another)
    └── ProviderError                  (batchpay.provider.errors) the service said no or
        ├── AuthError                  could not be reached; each says whether the outcome
        ├── RateLimited                is *definite* (nothing happened) or *ambiguous*
        ├── ServiceError               (a payout may have been made)
        ├── ConnectFailed
        ├── ResponseLost
        ├── UnexpectedResponse
        └── RequestRejected
            ├── QuoteExpired
            ├── InvalidQuote
            ├── InsufficientBalance
            └── PayoutListAbsent       404 on the payout list: the service offers none
                └── ServiceCheckImpossible   (engine.service_ledger) so a run cannot check
                                       it before paying and stops

Signals caught inside batchpay are not part of this tree: each lives beside the code that
raises and catches it, and ends as one of the above or as a row's status:

    provider.models.ShapeError          a success answer lacking a field: the client's
                                        UnexpectedResponse
    engine.sending.AuthStop             a 401/403 mid-run: every sender stops; the run ends
                                        with the AuthError
    engine.calibrate.CalibrationFailed  no quote delivers an invoice within the bound: the
                                        row's QUOTE_FAILED
    sshsig.SignatureError               a plan signature, key or approvers line that cannot
                                        be used
    engine.advice.MailFailed            one advice not taken by the mail server: its outbox
                                        record's state and last error, never a payout's

Library errors are mapped where they happen (the journal's SQLite errors inside a
transaction become JournalError, a disk full among them); the CLI's last line of defence
turns anything else into one or two lines, never a traceback.
"""

from __future__ import annotations

from batchpay.statuses import EXIT_FAILED, EXIT_ROWS

DISK_FULL_HINT = ("Free some space, then run the same command again: the journal keeps every "
                  "request already sent, so nothing is paid twice.")


class BatchpayError(Exception):
    """Root of every error batchpay raises on purpose."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(BatchpayError):
    """An option or combination of options that cannot work."""


class ConfigError(BatchpayError):
    """The settings file or environment cannot be used."""


class InputError(BatchpayError):
    """The sheet cannot be read at all: missing, not a spreadsheet, too big, hostile."""


class Interrupted(BatchpayError):
    """The operator pressed Ctrl-C; the message says where the results so far are."""


class ResultsNotWritten(BatchpayError):
    """Rows were paid and journaled, and their workbook could not be written (exit 1)."""

    exit_code = EXIT_ROWS


class AdviceError(BatchpayError):
    """Remittance advices cannot be made or mailed at all: no [mail] settings, no CJK font.
    Never raised by a run: a run pays the same whatever the mail does."""


class JournalError(BatchpayError):
    """The journal cannot be opened, read or written."""


class JournalLocked(JournalError):
    """Another run or rerun holds the journal."""


class AlreadySent(JournalError):
    """A payout request for this payout_ref was made since the run planned it (another run
    got there first): no second one is made."""

    def __init__(self, ref: str, status: str) -> None:
        super().__init__(f"payout_ref {ref} is already {status} in the journal: not sent again.")
        self.ref, self.status = ref, status


class JournalServiceMismatch(JournalError):
    """The journal records payouts of another service."""


class JournalTampered(JournalError):
    """The journal's tables (ledger, payout requests) disagree with its hash chain."""



class SigningKeyLocked(JournalError):
    """A console user's signing key, sealed in the team's database with a key derived from
    the chain key, cannot be opened or made on this host: it holds no chain key, or another
    one, or the sealed row does not open (changed, or copied from another user's row)."""
