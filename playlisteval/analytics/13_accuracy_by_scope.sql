-- Accuracy by corpus scope (paper Fig. 4, SPEC G2): the main forward run of each judge, evidence and
-- scope (full domain, frozen 24 h and 10 h corpora; oracle evidence for the gold segments alone), over
-- its judged pairs, with its errors; state and status say when that run is not finished.
SELECT
    f.benchmark_id,
    f.benchmark,
    f.judge,
    f.evidence,
    f.scope,
    s.state,
    s.status,
    s.errors,
    count(*) AS n,
    count(*) FILTER (WHERE f.verdict IS NULL) AS no_verdict,
    avg(f.score) AS accuracy
FROM judgment_facts AS f
JOIN main_run AS m ON m.run_id = f.run_id
JOIN run_status AS s ON s.run_id = f.run_id
WHERE NOT f.swapped
GROUP BY ALL
