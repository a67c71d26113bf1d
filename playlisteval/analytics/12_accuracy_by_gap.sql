-- Accuracy by rating gap (paper Fig. 3): the main forward pass of each judge, evidence and scope.
SELECT
    f.benchmark_id,
    f.benchmark,
    f.judge,
    f.evidence,
    f.scope,
    f.gap,
    count(*) AS n,
    avg(f.score) AS accuracy
FROM judgment_facts AS f
JOIN main_run AS m ON m.run_id = f.run_id
WHERE NOT f.swapped
GROUP BY ALL
