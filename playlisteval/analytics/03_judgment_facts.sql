-- One row per judgment with its run (judge, evidence, scope, sides swapped) and its pair's facts.
-- The score is recomputed from the verdict (SPEC G4): 1 for the intended answer, 0 for the other,
-- 0.5 for no verdict, so every view scores exactly as `playlisteval eval verdicts` does.
SELECT
    j.id AS judgment_id,
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
    CASE WHEN j.verdict IN ('A', 'B') THEN j.verdict END AS verdict,
    CAST(CASE
        WHEN j.verdict IS NULL OR j.verdict NOT IN ('A', 'B') THEN 0.5
        WHEN (j.verdict = 'A') = j.a_is_better THEN 1.0
        ELSE 0.0
    END AS DOUBLE) AS score
FROM judgment AS j
JOIN judge_run AS r ON r.id = j.run_id
LEFT JOIN benchmark AS b ON b.id = r.benchmark_id
JOIN pair_facts AS p ON p.pair_id = j.pair_id
