"""Each chapter's bookkeeping: its tables, fallbacks and headline numbers, one module per notebook."""
