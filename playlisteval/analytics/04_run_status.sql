-- One row per judge run: its options (hash, what it changes from the defaults, main or sweep) and where
-- it stands. pairs: its benchmark's; judged: with a judgment (no_verdict of them scored 0.5); errors:
-- failed calls, never judged nor scored, asked again when the run is run again; pending: neither yet.
-- state: finished (every pair judged), incomplete (errors, or a pass ended with pairs left), running.
-- status: '' when finished, else a short mark such as 'incomplete: 3 errors'. Each run carries its verdict
-- health (verdict_health, issue 40): the shares of no verdict, refusal, tie and one letter, flagged and
-- health ('unhealthy: 44/44 no verdict …', '' when healthy), verdicts_mix for tables.
WITH sizes AS (
    SELECT benchmark_id, count(*) AS pairs FROM benchmark_pair GROUP BY benchmark_id
),
judged AS (
    SELECT run_id, count(*) AS judged,
        count(*) FILTER (WHERE verdict IS NULL OR verdict NOT IN ('A', 'B')) AS no_verdict
    FROM judgment
    GROUP BY run_id
),
errors AS (
    SELECT run_id, count(*) AS errors FROM judge_error GROUP BY run_id
),
counted AS (
    SELECT
        r.id AS run_id,
        r.benchmark_id,
        r.judge,
        r.evidence,
        r.scope,
        r.swapped,
        o.options_hash,
        o.variant_hash,
        o.varies,
        m.run_id IS NOT NULL AS main,
        coalesce(s.pairs, 0) AS pairs,
        coalesce(j.judged, 0) AS judged,
        coalesce(j.no_verdict, 0) AS no_verdict,
        coalesce(e.errors, 0) AS errors,
        h.refusals,
        h.ties,
        h.verdicts_a,
        h.verdicts_b,
        h.no_verdict_share,
        h.refusal_share,
        h.tie_share,
        h.a_share,
        h.one_letter_share,
        h.no_verdict_flagged,
        h.one_letter_flagged,
        h.flagged,
        h.health,
        h.verdicts_mix,
        greatest(coalesce(s.pairs, 0) - coalesce(j.judged, 0) - coalesce(e.errors, 0), 0) AS pending,
        r.finished_at
    FROM judge_run AS r
    JOIN judge_run_options AS o ON o.run_id = r.id
    LEFT JOIN main_run AS m ON m.run_id = r.id
    LEFT JOIN sizes AS s ON s.benchmark_id = r.benchmark_id
    LEFT JOIN judged AS j ON j.run_id = r.id
    LEFT JOIN errors AS e ON e.run_id = r.id
    LEFT JOIN verdict_health AS h ON h.run_id = r.id
),
stated AS (
    SELECT
        *,
        CASE
            WHEN errors > 0 THEN 'incomplete'
            WHEN judged >= pairs THEN 'finished'
            WHEN finished_at = 0 THEN 'running'
            ELSE 'incomplete'
        END AS state
    FROM counted
)
SELECT
    * EXCLUDE (finished_at),
    CASE WHEN state = 'finished' THEN '' ELSE state || ': ' || concat_ws(', ',
        CASE WHEN errors > 0 THEN errors || ' error' || CASE WHEN errors = 1 THEN '' ELSE 's' END END,
        CASE WHEN pending > 0 THEN pending || ' of ' || pairs || ' pairs not judged' END) END AS status
FROM stated
