"""`playlisteval view`: a local web viewer over the store (issue 22, deliverable 5), read only.

    access.py      the viewer's token: ``?token=…`` once sets an HttpOnly cookie; any request without it → 403
    listing.py     paged, filtered lists of items and benchmark pairs (LIMIT/OFFSET over indexed joins)
    card.py        one pair as the paper's Fig. 6 shows it: question, cited gold, graded answers, verdicts
    boards.py      leaderboard with intervals, runs and sweeps, the gate funnel (the analytics' own functions)
    media.py       a video or one frame of it, served only for videos the store names, path-checked
    versus.py      judge against judge: the pairs one judge gets right and another wrong (issue 41)
    bundle.py      `view --bundle OUT`: the same pages of one benchmark as a static site (issue 41)
    bundle_links.py the bundle's links made relative; links to what it does not hold dropped
    app.py         the Starlette app: routes, autoescaped Jinja templates, the annotation app's CSP
    serve.py       binding the port first (a busy port fails before any URL is printed), then uvicorn

Same stack and security as the annotation app (playlisteval/human/app.py): 127.0.0.1 by default, a
token, a strict Content-Security-Policy, every model text escaped by the templates.
"""
