-- One row per judgment with its run (judge, evidence, scope, sides swapped) and its pair's facts.
-- The score is recomputed from the verdict (SPEC G4): 1 for the intended answer, 0 for the other,
-- 0.5 for no verdict, so every view scores exactly as `playlisteval eval verdicts` does.
SELECT
    j.judgment_id,
    j.run_id,
    r.benchmark_id,
    b.name AS benchmark,
    r.judge,
    r.evidence,
    r.scope,
    r.swapped,
    r.settings,
    j.pair_id,
    p.item_id,
    p.domain,
    p.gap,
    j.a_is_better,
    j.verdict,
    j.score
FROM judgment_core AS j
JOIN judge_run AS r ON r.id = j.run_id
LEFT JOIN benchmark AS b ON b.id = r.benchmark_id
JOIN pair_facts AS p ON p.pair_id = j.pair_id
-- analytics: view (made by each query that reads it, over the table judgment_core; runner.py)
