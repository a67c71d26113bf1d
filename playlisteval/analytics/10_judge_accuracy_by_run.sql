-- Pairwise accuracy (SPEC G8) of every judge run, per domain and overall (domain 'All'), with the
-- number of pairs and of replies without a verdict (scored 0.5 and counted here on their own).
SELECT
    run_id,
    benchmark_id,
    benchmark,
    judge,
    evidence,
    scope,
    swapped,
    CASE WHEN grouping(domain) = 1 THEN 'All' ELSE domain END AS domain,
    count(*) AS n,
    count(*) FILTER (WHERE verdict IS NULL) AS no_verdict,
    avg(score) AS accuracy
FROM judgment_facts
GROUP BY GROUPING SETS ((run_id, benchmark_id, benchmark, judge, evidence, scope, swapped, domain),
                        (run_id, benchmark_id, benchmark, judge, evidence, scope, swapped))
