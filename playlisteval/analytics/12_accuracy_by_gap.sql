-- Accuracy by rating gap (paper Fig. 3): the main forward run of each judge, evidence and scope, over
-- its judged pairs; state and status say when that run is not finished (errors or pairs left).
SELECT
    f.benchmark_id,
    f.benchmark,
    f.judge,
    f.evidence,
    f.scope,
    f.gap,
    s.state,
    s.status,
    count(*) AS n,
    avg(f.score) AS accuracy
FROM judgment_facts AS f
JOIN main_run AS m ON m.run_id = f.run_id
JOIN run_status AS s ON s.run_id = f.run_id
WHERE NOT f.swapped
GROUP BY ALL
