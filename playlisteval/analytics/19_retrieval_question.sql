-- One row per retrieval run and question (SPEC R2, R3): the gold segments' ranks turned into
-- Hit_both@k, Hit_any@k, Hit@k of each gold segment and nDCG@k (binary relevance, IDCG over min(2, k)),
-- beside the chance floors of a random ranking of the question's N segments: P(any) = 1 - C(N-2,k)/C(N,k),
-- P(both) = k(k-1)/(N(N-1)), the expected nDCG@k. k is the run's own; ranks are 1-based. The view
-- `retrieval` averages these over questions; the report's intervals resample them.
WITH per_question AS (
    SELECT
        rk.run_id,
        rr.embedder,
        rr.k,
        f.domain,
        rk.item_id,
        rk.n_segments,
        least(rr.k, rk.n_segments) AS kk,
        CASE WHEN greatest(rk.rank1, rk.rank2) <= rr.k AND least(rk.rank1, rk.rank2) >= 1 THEN 1.0 ELSE 0.0 END
            AS hit_both,
        CASE WHEN rk.rank1 BETWEEN 1 AND rr.k OR rk.rank2 BETWEEN 1 AND rr.k THEN 1.0 ELSE 0.0 END AS hit_any,
        CASE WHEN rk.rank1 BETWEEN 1 AND rr.k THEN 1.0 ELSE 0.0 END AS hit_seg1,
        CASE WHEN rk.rank2 BETWEEN 1 AND rr.k THEN 1.0 ELSE 0.0 END AS hit_seg2,
        (CASE WHEN rk.rank1 BETWEEN 1 AND rr.k THEN 1.0 / log2(rk.rank1 + 1) ELSE 0.0 END
         + CASE WHEN rk.rank2 BETWEEN 1 AND rr.k THEN 1.0 / log2(rk.rank2 + 1) ELSE 0.0 END)
            / CASE WHEN rr.k >= 2 THEN 1.0 + 1.0 / log2(3) ELSE 1.0 END AS ndcg
    FROM ranking AS rk
    JOIN retrieval_run AS rr ON rr.id = rk.run_id
    JOIN item_facts AS f ON f.item_id = rk.item_id
)
SELECT
    q.* EXCLUDE (kk),
    CASE WHEN n_segments >= 2
        THEN 1.0 - (n_segments - kk)::DOUBLE * (n_segments - kk - 1) / (n_segments::DOUBLE * (n_segments - 1))
    END AS chance_any,
    CASE WHEN n_segments >= 2 THEN kk::DOUBLE * (kk - 1) / (n_segments::DOUBLE * (n_segments - 1)) END
        AS chance_both,
    CASE WHEN n_segments >= 2
        THEN 2.0 / n_segments * (SELECT sum(1.0 / log2(i + 1)) FROM range(1, kk + 1) AS t(i))
            / CASE WHEN k >= 2 THEN 1.0 + 1.0 / log2(3) ELSE 1.0 END
    END AS chance_ndcg
FROM per_question AS q
