"""The offline world: synthetic playlists whose facts are known (synth/) and the `sim` that plays every
model role from those facts (sim/), so the whole tool runs, is tested and is demonstrated without keys.

What the sim computed is labelled simulated everywhere (models/simulated.py) and never presented as a finding.

May import: errors, config, store, media, prompts, models (the provider protocol it implements). Nothing
imports the world at module level except the commands (`synth`); the model registry names the sim
provider by a dotted string, loaded only when a `sim/…` model is asked for.
"""
