"""The benchmark's data, below both `select` (which draws it) and `eval` (which judges it): content keys
(keys.py) and preference pairs with their shared A/B side (pairs.py). Imports only the store and the state
machine, so the packages above share it without importing each other."""
