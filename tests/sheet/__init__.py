"""batchpay.sheet: reading, validating and writing sheets, and the sheet-level rules end to end."""
