-- How many judges solved each pair: the main forward, full-domain, retrieved-evidence runs that are
-- finished (a run with errors or pairs left is not counted until it is: see run_status).
SELECT
    f.benchmark_id,
    f.benchmark,
    f.pair_id,
    f.item_id,
    f.domain,
    f.gap,
    count(*) AS judges,
    avg(f.score) AS accuracy
FROM judgment_facts AS f
JOIN main_run AS m ON m.run_id = f.run_id
JOIN run_status AS s ON s.run_id = f.run_id
WHERE NOT f.swapped AND f.scope = 'domain' AND f.evidence = 'retrieved' AND s.state = 'finished'
GROUP BY ALL
