-- Position bias (SPEC G5, paper Table 14): a judge's main forward run against its main swapped run of
-- the same benchmark, evidence and scope, paired only when every other option is the same (the same
-- variant hash: modality, frames, size, thinking, ...), over the pairs judged in both. Shares are of
-- those pairs: "picked A" counts replies with verdict A (no verdict is not A); letter agreement counts
-- pairs given the same letter both times (the judge followed the slot, not the answer); solved / wrong
-- in both count pairs scored 1 / 0 both times. Consistent: letter agreement below the configured
-- threshold. status says when either run is not finished.
WITH runs AS (
    SELECT m.run_id, m.benchmark_id, m.judge, m.evidence, m.scope, m.swapped, s.variant_hash, s.status
    FROM main_run AS m
    JOIN run_status AS s ON s.run_id = m.run_id
),
couples AS (
    SELECT
        f.run_id AS forward_run,
        r.run_id AS reversed_run,
        f.benchmark_id,
        f.judge,
        f.evidence,
        f.scope,
        concat_ws('; ', CASE WHEN f.status <> '' THEN 'forward ' || f.status END,
                  CASE WHEN r.status <> '' THEN 'reversed ' || r.status END) AS status
    FROM runs AS f
    JOIN runs AS r
        ON r.benchmark_id IS NOT DISTINCT FROM f.benchmark_id
        AND r.judge = f.judge
        AND r.evidence = f.evidence
        AND r.scope = f.scope
        AND r.variant_hash = f.variant_hash
        AND r.variant_hash <> ''
    WHERE NOT f.swapped AND r.swapped
),
-- each couple's forward judgments first, then the reversed ones joined on their run and the pair: left
-- to itself DuckDB joined the two runs' judgments on the pair alone (analytics/rates.py, JOINS). Summed per
-- couple (its two run ids), the couple's names joined after: grouping a quarter of a million rows by their
-- names' strings cost more than the sums (issue 43).
forward AS MATERIALIZED (
    SELECT c.forward_run, c.reversed_run, fwd.pair_id, fwd.score, fwd.verdict
    FROM couples AS c
    JOIN judgment_core AS fwd ON fwd.run_id = c.forward_run
    JOIN pair_facts AS pf ON pf.pair_id = fwd.pair_id  -- judgment_facts' judgments: a pair with its facts
),
sums AS (
    SELECT
        fwd.forward_run,
        fwd.reversed_run,
        count(*) AS n,
        avg(fwd.score) AS accuracy_forward,
        avg(rev.score) AS accuracy_reversed,
        avg(CASE WHEN fwd.verdict = 'A' THEN 1.0 ELSE 0.0 END) AS picked_a_forward,
        avg(CASE WHEN rev.verdict = 'A' THEN 1.0 ELSE 0.0 END) AS picked_a_reversed,
        avg(CASE WHEN fwd.verdict IS NOT NULL AND fwd.verdict = rev.verdict THEN 1.0 ELSE 0.0 END)
            AS letter_agreement,
        avg(CASE WHEN fwd.score = 1 AND rev.score = 1 THEN 1.0 ELSE 0.0 END) AS solved_both,
        avg(CASE WHEN fwd.score = 0 AND rev.score = 0 THEN 1.0 ELSE 0.0 END) AS wrong_both
    FROM forward AS fwd
    JOIN judgment_core AS rev ON rev.run_id = fwd.reversed_run AND rev.pair_id = fwd.pair_id
    GROUP BY fwd.forward_run, fwd.reversed_run
),
both_runs AS (
    SELECT
        c.benchmark_id,
        b.name AS benchmark,
        c.judge,
        c.evidence,
        c.scope,
        c.forward_run,
        c.reversed_run,
        c.status,
        s.n,
        s.accuracy_forward,
        s.accuracy_reversed,
        s.picked_a_forward,
        s.picked_a_reversed,
        s.letter_agreement,
        s.solved_both,
        s.wrong_both
    FROM sums AS s
    JOIN couples AS c ON c.forward_run = s.forward_run AND c.reversed_run = s.reversed_run
    LEFT JOIN benchmark AS b ON b.id = c.benchmark_id
)
SELECT b.*, b.letter_agreement < p.consistent_letter_agreement AS consistent
FROM both_runs AS b
CROSS JOIN analytics_param AS p
