"""Providers: each translates one ModelRequest into its SDK's call and the answer back (DESIGN 6).
Retries, caching, the ledger and the budget are the runner's (models/runner.py), never a provider's."""
