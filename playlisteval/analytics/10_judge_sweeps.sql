-- Sweeps (SPEC G6): every run whose options differ from the configured defaults, labelled by what it
-- changes (varies, e.g. 'frames=16'), beside the main run of the same judge, benchmark, evidence, scope
-- and side order: the accuracy of each over the pairs it judged, and the sweep's minus the main's; the
-- verdict health of each (issue 40: a sweep or main run whose replies are mostly no verdict is flagged).
SELECT
    s.run_id,
    s.benchmark_id,
    s.benchmark,
    s.judge,
    s.evidence,
    s.scope,
    s.swapped,
    CASE WHEN s.varies = '' THEN 'a repeat of the main run' ELSE s.varies END AS varies,
    s.n,
    s.no_verdict,
    s.errors,
    s.accuracy,
    s.state,
    s.status,
    m.run_id AS main_run_id,
    m.accuracy AS main_accuracy,
    s.accuracy - m.accuracy AS difference,
    s.no_verdict_share,
    s.a_share,
    s.one_letter_share,
    s.flagged,
    s.health,
    s.verdicts_mix,
    m.flagged AS main_flagged,
    m.health AS main_health
FROM judge_accuracy_by_run AS s
LEFT JOIN judge_accuracy_by_run AS m
    ON m.main AND m.domain = 'All'
    AND m.benchmark_id = s.benchmark_id AND m.judge = s.judge AND m.evidence = s.evidence
    AND m.scope = s.scope AND m.swapped = s.swapped
WHERE NOT s.main AND s.domain = 'All'
