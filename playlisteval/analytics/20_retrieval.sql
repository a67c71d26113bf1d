-- Retriever scores (SPEC R2, paper Tables 2 and 15) per retrieval run, per domain and overall ('All'):
-- Hit_both@k, Hit_any@k, Hit@k of each gold segment, nDCG@k, each beside its chance floor for a random
-- ranking (SPEC R3), as means over the run's questions of the view `retrieval_question`.
SELECT
    run_id,
    embedder,
    k,
    CASE WHEN grouping(domain) = 1 THEN 'All' ELSE domain END AS domain,
    count(*) AS n,
    avg(n_segments) AS mean_segments,
    avg(hit_both) AS hit_both,
    avg(hit_any) AS hit_any,
    avg(hit_seg1) AS hit_seg1,
    avg(hit_seg2) AS hit_seg2,
    avg(ndcg) AS ndcg,
    avg(chance_both) AS chance_both,
    avg(chance_any) AS chance_any,
    avg(chance_ndcg) AS chance_ndcg
FROM retrieval_question
GROUP BY GROUPING SETS ((run_id, embedder, k, domain), (run_id, embedder, k))
