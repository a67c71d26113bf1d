-- Paper Table 1 (SPEC G8): each judge's accuracy on the full-domain scope, forward sides, main run
-- (the configured default options), with retrieved and with uniform evidence and their difference,
-- per domain and overall ('All'). Accuracy is over the judged pairs (no verdict counts 0.5); a run that
-- is not finished is never shown as a plain result: complete is false and status says what is
-- missing ('retrieved incomplete: 3 errors'), and a run that judged nothing still has its 'All' row.
-- Verdict health (issue 40), on every row of a judge: flagged when either run is (verdict_health), health
-- naming which ('retrieved unhealthy: 44/44 no verdict …'), and each run's verdict mix and shares.
WITH runs AS (
    SELECT m.run_id, m.benchmark_id, m.judge, m.evidence, s.state, s.status, s.errors,
        s.flagged, s.health, s.verdicts_mix, s.no_verdict_share, s.one_letter_share, s.a_share
    FROM main_run AS m
    JOIN run_status AS s ON s.run_id = m.run_id
    WHERE NOT m.swapped AND m.scope = 'domain' AND m.evidence IN ('retrieved', 'uniform')
),
acc AS (
    SELECT
        r.benchmark_id,
        r.judge,
        r.evidence,
        CASE WHEN grouping(f.domain) = 1 THEN 'All' ELSE f.domain END AS domain,
        count(*) AS n,
        count(*) FILTER (WHERE f.verdict IS NULL) AS no_verdict,
        avg(f.score) AS accuracy
    FROM judgment_facts AS f
    JOIN runs AS r ON r.run_id = f.run_id
    GROUP BY GROUPING SETS ((r.benchmark_id, r.judge, r.evidence, f.domain), (r.benchmark_id, r.judge, r.evidence))
),
cells AS (
    SELECT benchmark_id, judge, evidence, domain FROM acc
    UNION
    SELECT benchmark_id, judge, evidence, 'All' FROM runs
),
judges AS (  -- a judge's standing over both runs, on every one of its rows
    SELECT
        benchmark_id,
        judge,
        max(errors) FILTER (WHERE evidence = 'retrieved') AS errors_retrieved,
        max(errors) FILTER (WHERE evidence = 'uniform') AS errors_uniform,
        bool_and(state = 'finished') AS complete,
        coalesce(string_agg(CASE WHEN status <> '' THEN evidence || ' ' || status END, '; ' ORDER BY evidence), '')
            AS status,
        bool_or(flagged) AS flagged,
        coalesce(string_agg(CASE WHEN flagged THEN evidence || ' ' || health END, '; ' ORDER BY evidence), '')
            AS health,
        max(verdicts_mix) FILTER (WHERE evidence = 'retrieved') AS verdicts_retrieved,
        max(verdicts_mix) FILTER (WHERE evidence = 'uniform') AS verdicts_uniform,
        max(no_verdict_share) FILTER (WHERE evidence = 'retrieved') AS no_verdict_share_retrieved,
        max(no_verdict_share) FILTER (WHERE evidence = 'uniform') AS no_verdict_share_uniform,
        max(one_letter_share) FILTER (WHERE evidence = 'retrieved') AS one_letter_share_retrieved,
        max(one_letter_share) FILTER (WHERE evidence = 'uniform') AS one_letter_share_uniform,
        max(a_share) FILTER (WHERE evidence = 'retrieved') AS a_share_retrieved,
        max(a_share) FILTER (WHERE evidence = 'uniform') AS a_share_uniform
    FROM runs
    GROUP BY benchmark_id, judge
)
SELECT
    c.benchmark_id,
    b.name AS benchmark,
    c.judge,
    c.domain,
    max(a.accuracy) FILTER (WHERE c.evidence = 'retrieved') AS retrieved,
    max(a.accuracy) FILTER (WHERE c.evidence = 'uniform') AS uniform,
    max(a.accuracy) FILTER (WHERE c.evidence = 'retrieved') - max(a.accuracy) FILTER (WHERE c.evidence = 'uniform')
        AS difference,
    max(a.n) FILTER (WHERE c.evidence = 'retrieved') AS n_retrieved,
    max(a.n) FILTER (WHERE c.evidence = 'uniform') AS n_uniform,
    max(a.no_verdict) FILTER (WHERE c.evidence = 'retrieved') AS no_verdict_retrieved,
    max(a.no_verdict) FILTER (WHERE c.evidence = 'uniform') AS no_verdict_uniform,
    j.errors_retrieved,
    j.errors_uniform,
    j.complete,
    j.status,
    j.flagged,
    j.health,
    j.verdicts_retrieved,
    j.verdicts_uniform,
    j.no_verdict_share_retrieved,
    j.no_verdict_share_uniform,
    j.one_letter_share_retrieved,
    j.one_letter_share_uniform,
    j.a_share_retrieved,
    j.a_share_uniform
FROM cells AS c
JOIN judges AS j ON j.benchmark_id = c.benchmark_id AND j.judge = c.judge
LEFT JOIN acc AS a ON a.benchmark_id = c.benchmark_id AND a.judge = c.judge AND a.evidence = c.evidence
    AND a.domain = c.domain
LEFT JOIN benchmark AS b ON b.id = c.benchmark_id
GROUP BY ALL
