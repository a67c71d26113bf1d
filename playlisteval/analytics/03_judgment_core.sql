-- One row per judgment, its numbers only: run, pair, the sides and the score recomputed from the
-- verdict (SPEC G4: 1 for the intended answer, 0 for the other, 0.5 for no verdict). The base of
-- judgment_facts, which adds each run's and pair's facts when a query reads it (a million rows of
-- repeated run and pair strings cost more to make once than to join each time).
SELECT
    j.id AS judgment_id,
    j.run_id,
    j.pair_id,
    j.a_is_better,
    CASE WHEN j.verdict IN ('A', 'B') THEN j.verdict END AS verdict,
    CAST(CASE
        WHEN j.verdict IS NULL OR j.verdict NOT IN ('A', 'B') THEN 0.5
        WHEN (j.verdict = 'A') = j.a_is_better THEN 1.0
        ELSE 0.0
    END AS DOUBLE) AS score
FROM judgment AS j
