"""The build: an item's life from seed to accepted benchmark question (SPEC B–E).

    stages/     one module per step of the state table (store/states.py): generate, check, degrade,
                with the feedback that turns rejections into the next attempt's guidance
    gates/      the checks each step runs (C1–C3, D2–D4) and the build's preflight
    inputs.py   what a seed's segments give a stage (chunks, transcripts, clip ranges)
    bounded.py  which seeds become items under the run's bounds
    story.py    one item's whole story, as `show` prints it
    spend.py    a build's spend and projected cost, as `status` prints it

May import: errors, config, store, media, prompts, models, index. Never actors, eval, select, commands:
the engine (actors/) runs these steps; the build's drivers (`build`, `resume`, batch rounds) live there.
"""
