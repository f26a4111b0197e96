"""The one table of sheet columns.

Everything that spells the column list is derived from COLUMNS: the pandera schema
(batchpay.sheet.schema), the template workbook, the README's column table (readme_table,
checked by a test) and the payout request builder (PayoutRow.payout_body).
"""

from __future__ import annotations

from dataclasses import dataclass

# The wallets operators pay from most often: the template's dropdown for source_currency.
COMMON_SOURCE_CURRENCIES: tuple[str, ...] = (
    "NGN", "USD", "GBP", "EUR", "KES", "GHS", "ZAR", "XOF", "XAF", "UGX", "TZS", "RWF",
    "ZMW", "MWK", "EGP",
)


@dataclass(frozen=True)
class Column:
    name: str  # canonical header, e.g. "payout_ref"
    # "yes" | "no" | "BUSINESS" | "yes*" (source_currency: or --source-currency) |
    # "one" (exactly one of the "one" columns: amount or target_amount)
    required: str
    kind: str  # "id" | "text" | "amount" | "choice" | "currency" | "country"
    rule: str  # one line, the README column table's rule text
    help: str  # how to fill it (template "How to fill" sheet)
    example: str  # a realistic example value
    default: str | None = None  # used when the cell is empty
    choices: tuple[str, ...] = ()  # dropdown values
    # Dotted path in the payout request body; "quote:..." feeds the quote request instead;
    # None: batchpay's own bookkeeping (payout_ref is the journal key, never sent).
    api_field: str | None = None
    max_length: int | None = None  # text length limit, where the service has one

    @property
    def required_label(self) -> str:
        """How the README and the template say whether the column must be filled."""
        if self.required == "one":
            other = " or ".join(c for c in ONE_OF if c != self.name)
            return f"this or {other}"
        return {"BUSINESS": "if BUSINESS", "yes*": "yes*"}.get(self.required, self.required)


COLUMNS: tuple[Column, ...] = (
    Column(
        "payout_ref", "yes", "id",
        "your unique key for the payout (1–64 of `A-Z a-z 0-9 . _ - /`), unique in the sheet; "
        "the journal never pays one twice",
        "Your own reference for this payment, e.g. invoice or payroll line. Each payout_ref "
        "is paid at most once, across all runs: never reuse one for a different payment.",
        "INV-2024-0001", max_length=64,
    ),
    Column(
        "recipient_type", "yes", "choice", "BUSINESS or INDIVIDUAL (any case)",
        "BUSINESS for a company, INDIVIDUAL for a person.",
        "BUSINESS", choices=("BUSINESS", "INDIVIDUAL"), api_field="recipient.type",
    ),
    Column(
        "recipient_name", "yes", "text", "any script (Chinese expected), ≤ 140 chars",
        "The account holder's name exactly as the bank knows it, in Chinese characters "
        "if that is how the account is registered.",
        "深圳市华强电子有限公司", api_field="recipient.name", max_length=140,
    ),
    Column(
        "company_name", "BUSINESS", "text", "required when recipient_type is BUSINESS",
        "The registered company name (for BUSINESS recipients).",
        "深圳市华强电子有限公司", api_field="recipient.companyName", max_length=140,
    ),
    Column(
        "company_id", "BUSINESS", "id",
        "18-char unified social credit code, check character verified (GB 32100-2015)",
        "The company's 18-character unified social credit code (统一社会信用代码), as on "
        "its business licence. Format the column as Text.",
        "91350100M000100Y43", api_field="recipient.companyIdNumber",
    ),
    Column(
        "ic_number", "no", "id",
        "18-char resident ID number, check digit verified (ISO 7064 MOD 11-2)",
        "For INDIVIDUAL recipients: the 18-character resident ID card number (居民身份证号码). "
        "Format the column as Text.",
        "11010519491231002X", api_field="recipient.icNumber",
    ),
    Column(
        "account_number", "yes", "id",
        "8–30 digits; spaces/hyphens removed; a numeric spreadsheet cell with more than 15 "
        "digits is rejected (the spreadsheet already lost digits)",
        "The recipient's bank account or card number. Format the column as Text before "
        "typing: spreadsheets keep only 15 digits of a number.",
        "6222021234567890123", api_field="recipient.account.accountNumber",
    ),
    Column(
        "bank_name", "yes", "text", "the recipient's bank",
        "The bank's name, e.g. as in `batchpay banks --country CN --currency CNY`.",
        "中国工商银行", api_field="recipient.account.bankName",
        max_length=140,
    ),
    Column(
        "bank_city", "no", "text", "city of the account's branch",
        "The city of the branch that holds the account.",
        "Shenzhen", api_field="recipient.account.bankCity", max_length=140,
    ),
    Column(
        "sort_code", "no", "id", "digits",
        "The bank's code, digits only, if you know it.",
        "102100099996", api_field="recipient.account.sortCode", max_length=30,
    ),
    Column(
        "amount", "one", "amount",
        "> 0, at most the source currency's decimals (2 for NGN/USD), sent as the quote's "
        "source amount; fill exactly one of amount and target_amount",
        "The amount to debit from your wallet, in source_currency. No more decimals than "
        "the currency has (2 for NGN and USD): batchpay never rounds. Leave it empty when "
        "the row gives target_amount instead.",
        "250000.00", api_field="quote:source.amount",
    ),
    Column(
        "target_amount", "one", "amount",
        "> 0, at most 2 decimals (CNY): the amount the recipient must receive, e.g. an "
        "invoice; batchpay finds the source amount from the service's quotes and never "
        "pays less",
        "What the recipient must receive, in currency (CNY), e.g. the invoice total "
        "12345.67. batchpay quotes until the service delivers at least this much (never "
        "less; at most what one minor unit of your wallet currency buys more). Leave "
        "amount empty on such a row.",
        "12345.67",
    ),
    Column(
        "payee_id", "no", "id",
        "the operator's own id for the payee (1–64 characters); keys the payee register "
        "(else company_id, ic_number, name)",
        "Your own supplier or staff number for this payee. batchpay compares every row's "
        "bank details with what this payee was paid on before, and holds a change until "
        "you confirm it. Without it the payee is known by company_id, ic_number or name.",
        "SUP-104", max_length=64,
    ),
    Column(
        "payee_email", "no", "text",
        "an e-mail address (`name@example.cn`); the payee's remittance advice goes there "
        "once its rows are COMPLETED; never sent to the service",
        "The payee's e-mail address for the remittance advice (a PDF in Chinese and English "
        "of what was paid). Leave empty to send none.",
        "finance@huaqiang.example.cn", max_length=254,
    ),
    Column(
        "source_currency", "yes*", "currency",
        "wallet currency debited (ISO 4217); *or `--source-currency`",
        "The wallet currency to pay from (ISO 4217 code, e.g. NGN or USD). May be left "
        "empty when the command is given --source-currency.",
        "NGN", choices=COMMON_SOURCE_CURRENCIES, api_field="quote:source.currency",
    ),
    Column(
        "reason", "yes", "text", "purpose of the payment",
        "Why you are paying, e.g. 'Payment for goods' or 'Salary'.",
        "Payment for goods", api_field="reason", max_length=140,
    ),
    Column(
        "remark", "no", "text",
        "passed to the payout's `remark`, then `ref:PAYOUT_REF` (the remark cut to make room)",
        "A note that travels with the payout.",
        "Invoice 0001", api_field="remark", max_length=140,
    ),
    Column(
        "item_category", "no", "text", "passed to `recipient.itemCategory`",
        "What is being paid for, if your account requires it.",
        "ELECTRONICS", api_field="recipient.itemCategory", max_length=64,
    ),
    Column(
        "currency", "no", "currency", "currency the recipient receives (ISO 4217); default CNY",
        "Leave empty for CNY.",
        "CNY", default="CNY", choices=("CNY",), api_field="recipient.currency",
    ),
    Column(
        "country", "no", "country", "recipient's country (ISO 3166 two letters); default CN",
        "Leave empty for CN.",
        "CN", default="CN", choices=("CN",), api_field="recipient.country",
    ),
    Column(
        "payment_channel", "no", "choice", "BANK_TRANSFER; default BANK_TRANSFER",
        "Leave empty for BANK_TRANSFER.",
        "BANK_TRANSFER", default="BANK_TRANSFER", choices=("BANK_TRANSFER",),
        api_field="recipient.paymentChannel",
    ),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
COLUMNS_BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
# Columns whose cells must keep every character: a number cell loses digits and zeros.
IDENTIFIER_COLUMNS = ("payout_ref", "account_number", "company_id", "ic_number", "sort_code",
                      "payee_id")
AMOUNT_COLUMN = "amount"
TARGET_AMOUNT_COLUMN = "target_amount"
ONE_OF = (AMOUNT_COLUMN, TARGET_AMOUNT_COLUMN)  # a row fills exactly one of them


def normalize_header(text: object) -> str:
    """How a header written by a person is matched: trimmed, lower case, spaces → `_`."""
    words = str(text).replace("\u00a0", " ").strip().lower().split()
    return "_".join(words)


def readme_table() -> str:
    """The README's column table, generated from COLUMNS (a test keeps the README in step)."""
    lines = [
        "| column | required | default | rule | example |",
        "|---|---|---|---|---|",
    ]
    for c in COLUMNS:
        cells = [f"`{c.name}`", c.required_label, c.default or "", c.rule, f"`{c.example}`"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
