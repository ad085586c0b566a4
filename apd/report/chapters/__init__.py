"""Chapter logic the book's notebooks call: table assembly, fallbacks and bookkeeping, one module per chapter."""
