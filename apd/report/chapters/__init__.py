"""Chapter logic the book's notebooks call: table assembly, fallbacks and figures, one module per chapter."""
