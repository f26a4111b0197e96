"""Sending one e-mail through the SMTP server of the `[mail]` settings.

The engine hands a finished message to `SmtpMailer.send`; what goes wrong comes back as one
`MailFailed` (batchpay.engine.advice) that says whether it is worth trying again (`retry`: the server could not be
reached or said "later", 4xx) and whether the next advice can go at all (`server`: nothing
can be sent until the server, or the login, is fixed). A refusal of this one message (a
5xx for its recipient or its content) is neither: the advice is failed for good.
smtplib's own errors never leave this module.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

from batchpay.engine.advice import MailFailed
from batchpay.settings.mail import mail_password
from batchpay.settings.model import Mail, scrub


class SmtpMailer:
    """One connection per message: advices are few (one per payee and run), and a
    connection that broke between two of them is then never a reason to fail the second."""

    def __init__(self, mail: Mail, password: str | None = None) -> None:
        self.mail = mail
        self.password = password if password is not None else mail_password()

    def send(self, message: EmailMessage) -> None:
        mail = self.mail
        try:
            if mail.security == "ssl":
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(
                    mail.host, mail.port, timeout=mail.timeout,
                    context=ssl.create_default_context())
            else:
                smtp = smtplib.SMTP(mail.host, mail.port, timeout=mail.timeout)
            with smtp:
                if mail.security == "starttls":
                    smtp.starttls(context=ssl.create_default_context())
                if mail.user:
                    smtp.login(mail.user, self.password or "")
                smtp.send_message(message)
        except smtplib.SMTPAuthenticationError as exc:
            raise MailFailed(f"the mail server refused the login of {mail.user}: "
                             f"{_said(exc.smtp_code, exc.smtp_error)}",
                             retry=False, server=True) from None
        except smtplib.SMTPRecipientsRefused as exc:
            said = "; ".join(f"{who}: {_said(code, text)}"
                             for who, (code, text) in exc.recipients.items())
            raise MailFailed(f"the mail server refused the recipient ({said})",
                             retry=_later(min(c for c, _ in exc.recipients.values())),
                             server=False) from None
        except smtplib.SMTPResponseException as exc:  # sender, data or a command refused
            raise MailFailed(f"the mail server said {_said(exc.smtp_code, exc.smtp_error)}",
                             retry=_later(exc.smtp_code), server=_later(exc.smtp_code)) from None
        except smtplib.SMTPNotSupportedError as exc:
            raise MailFailed(f"the mail server at {mail.host}:{mail.port} does not support "
                             f"{exc} (check [mail] security)", retry=False, server=True) from None
        except (smtplib.SMTPException, OSError) as exc:  # refused, timed out, TLS, DNS
            raise MailFailed(f"could not reach the mail server at {mail.host}:{mail.port}: "
                             f"{scrub(str(exc)) or type(exc).__name__}",
                             retry=True, server=True) from None


def _later(code: int) -> bool:
    """4xx: the server asks to try again later; 5xx: a permanent refusal."""
    return 400 <= code < 500


def _said(code: int, text: bytes | str) -> str:
    shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return scrub(f"{code} {shown}".strip())
