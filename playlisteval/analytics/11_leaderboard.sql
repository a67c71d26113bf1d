-- Paper Table 1 (SPEC G8): each judge's accuracy on the full-domain scope, forward sides, main run
-- (the configured default options), with retrieved and with uniform evidence and their difference,
-- per domain and overall ('All'). Accuracy is over the judged pairs (no verdict counts 0.5); a run that
-- is not finished is never shown as a plain result: complete is false and status says what is
-- missing ('retrieved incomplete: 3 errors'), and a run that judged nothing still has its 'All' row.
WITH runs AS (
    SELECT m.run_id, m.benchmark_id, m.judge, m.evidence, s.state, s.status, s.errors
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
            AS status
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
    j.status
FROM cells AS c
JOIN judges AS j ON j.benchmark_id = c.benchmark_id AND j.judge = c.judge
LEFT JOIN acc AS a ON a.benchmark_id = c.benchmark_id AND a.judge = c.judge AND a.evidence = c.evidence
    AND a.domain = c.domain
LEFT JOIN benchmark AS b ON b.id = c.benchmark_id
GROUP BY c.benchmark_id, b.name, c.judge, c.domain, j.errors_retrieved, j.errors_uniform, j.complete, j.status
