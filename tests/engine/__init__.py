"""batchpay.engine: the journal, the exactly-once gate and the controls, alone and end to end."""
