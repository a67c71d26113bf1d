-- Paper Table 1 (SPEC G8): each judge's accuracy on the full-domain scope, forward sides, main pass,
-- with retrieved and with uniform evidence and their difference, per domain and overall ('All').
WITH acc AS (
    SELECT
        f.benchmark_id,
        f.benchmark,
        f.judge,
        f.evidence,
        CASE WHEN grouping(f.domain) = 1 THEN 'All' ELSE f.domain END AS domain,
        count(*) AS n,
        count(*) FILTER (WHERE f.verdict IS NULL) AS no_verdict,
        avg(f.score) AS accuracy
    FROM judgment_facts AS f
    JOIN main_run AS m ON m.run_id = f.run_id
    WHERE NOT f.swapped AND f.scope = 'domain' AND f.evidence IN ('retrieved', 'uniform')
    GROUP BY GROUPING SETS ((f.benchmark_id, f.benchmark, f.judge, f.evidence, f.domain),
                            (f.benchmark_id, f.benchmark, f.judge, f.evidence))
)
SELECT
    benchmark_id,
    benchmark,
    judge,
    domain,
    max(accuracy) FILTER (WHERE evidence = 'retrieved') AS retrieved,
    max(accuracy) FILTER (WHERE evidence = 'uniform') AS uniform,
    max(accuracy) FILTER (WHERE evidence = 'retrieved') - max(accuracy) FILTER (WHERE evidence = 'uniform')
        AS difference,
    max(n) FILTER (WHERE evidence = 'retrieved') AS n_retrieved,
    max(n) FILTER (WHERE evidence = 'uniform') AS n_uniform,
    max(no_verdict) FILTER (WHERE evidence = 'retrieved') AS no_verdict_retrieved,
    max(no_verdict) FILTER (WHERE evidence = 'uniform') AS no_verdict_uniform
FROM acc
GROUP BY benchmark_id, benchmark, judge, domain
