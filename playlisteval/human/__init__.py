"""The human study (SPEC H; issue 12): plan, evidence clips, the annotation app, crowd files, results.

    design.py      `human plan`: a seeded stratified sample of benchmark pairs, slots, attention checks
    grounding.py   the role-H request (segment video + relabelled transcript) and the check of its reply
    evidence.py    grounded ranges → 30-s clips cut exactly and stored per task; faults kept, retried
    annotators.py  invitations: per-annotator link tokens (only their hashes are stored), CSRF tokens
    assign.py      which task an annotator sees next, progress, and a final, durable rating
    tasks.py       one task as an annotator sees it: question, answers by slot, clips, differences
    diff.py        word-level differences between the two answers
    words.py       the reason's word count, the same rule in the server, the browser and the import
    crowd.py       `human export` / `human import` for crowd platforms
    results.py     `human report`: agreement with the intended answer, Krippendorff's alpha, intervals
    app.py         `human serve`: the Starlette app (Jinja2 templates, local static files, no build step)
"""
