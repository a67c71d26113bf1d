-- Pairwise accuracy (SPEC G8) of every judge run, per domain and overall (domain 'All'), with the
-- number of judged pairs and of replies without a verdict (scored 0.5 and counted here on their own);
-- failed calls are not judged pairs: errors counts them beside the accuracy. Each run carries its
-- options (main: the configured defaults; varies: what a sweep changes), its state and its verdict health
-- over the whole run (run_status; issue 40: flagged, health, the shares), on each of its rows.
WITH acc AS (
    SELECT
        run_id,
        CASE WHEN grouping(domain) = 1 THEN 'All' ELSE domain END AS domain,
        count(*) AS n,
        count(*) FILTER (WHERE verdict IS NULL) AS no_verdict,
        avg(score) AS accuracy
    FROM judgment_facts
    GROUP BY GROUPING SETS ((run_id, domain), (run_id))
)
SELECT
    s.run_id,
    s.benchmark_id,
    b.name AS benchmark,
    s.judge,
    s.evidence,
    s.scope,
    s.swapped,
    coalesce(a.domain, 'All') AS domain,
    coalesce(a.n, 0) AS n,
    coalesce(a.no_verdict, 0) AS no_verdict,
    a.accuracy,
    s.errors,
    s.main,
    s.varies,
    s.options_hash,
    s.state,
    s.status,
    s.refusals,
    s.ties,
    s.no_verdict_share,
    s.a_share,
    s.one_letter_share,
    s.flagged,
    s.health,
    s.verdicts_mix
FROM run_status AS s
LEFT JOIN acc AS a ON a.run_id = s.run_id
LEFT JOIN benchmark AS b ON b.id = s.benchmark_id
