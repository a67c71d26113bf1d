-- Position bias (SPEC G5, paper Table 14): a judge's main forward pass against its main swapped pass
-- of the same benchmark, evidence and scope, over the pairs judged in both. Shares are of those pairs:
-- "picked A" counts replies with verdict A (no verdict is not A); letter agreement counts pairs given
-- the same letter both times (the judge followed the slot, not the answer); solved / wrong in both
-- count pairs scored 1 / 0 both times. Consistent: letter agreement below the configured threshold.
WITH fwd AS (
    SELECT f.* FROM judgment_facts AS f JOIN main_run AS m ON m.run_id = f.run_id WHERE NOT f.swapped
),
rev AS (
    SELECT f.* FROM judgment_facts AS f JOIN main_run AS m ON m.run_id = f.run_id WHERE f.swapped
),
both_runs AS (
    SELECT
        fwd.benchmark_id,
        fwd.benchmark,
        fwd.judge,
        fwd.evidence,
        fwd.scope,
        count(*) AS n,
        avg(fwd.score) AS accuracy_forward,
        avg(rev.score) AS accuracy_reversed,
        avg(CASE WHEN fwd.verdict = 'A' THEN 1.0 ELSE 0.0 END) AS picked_a_forward,
        avg(CASE WHEN rev.verdict = 'A' THEN 1.0 ELSE 0.0 END) AS picked_a_reversed,
        avg(CASE WHEN fwd.verdict IS NOT NULL AND fwd.verdict = rev.verdict THEN 1.0 ELSE 0.0 END)
            AS letter_agreement,
        avg(CASE WHEN fwd.score = 1 AND rev.score = 1 THEN 1.0 ELSE 0.0 END) AS solved_both,
        avg(CASE WHEN fwd.score = 0 AND rev.score = 0 THEN 1.0 ELSE 0.0 END) AS wrong_both
    FROM fwd
    JOIN rev
        ON rev.benchmark_id IS NOT DISTINCT FROM fwd.benchmark_id
        AND rev.judge = fwd.judge
        AND rev.evidence = fwd.evidence
        AND rev.scope = fwd.scope
        AND rev.pair_id = fwd.pair_id
    GROUP BY ALL
)
SELECT b.*, b.letter_agreement < p.consistent_letter_agreement AS consistent
FROM both_runs AS b
CROSS JOIN analytics_param AS p
