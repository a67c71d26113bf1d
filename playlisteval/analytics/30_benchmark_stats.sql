-- Benchmark statistics (SPEC F4, paper Table 12), one row per benchmark (one row with no benchmark
-- when none exists yet). Corpus: domains, playlists, indexed videos. Questions: accepted by the build;
-- with a pair the difficulty gate kept; sampled per domain (SPEC F3's first level, before pair
-- sampling); in the benchmark (with a drawn pair, after pair sampling). Words (mean / max, citations
-- removed) of the benchmark's questions, gold answers and degraded answers; per pair, chosen minus
-- rejected words and the share of pairs whose chosen (better) answer is the longer one.
WITH corpus AS (
    SELECT
        (SELECT count(*) FROM domain) AS domains,
        (SELECT count(*) FROM playlist) AS playlists,
        (SELECT count(*) FROM video WHERE status = 'indexed') AS videos,
        (SELECT count(*) FROM item_facts WHERE accepted) AS accepted_questions,
        (SELECT count(DISTINCT item_id) FROM pair WHERE kept) AS kept_questions,
        (SELECT count(*) FROM pair WHERE kept) AS kept_pairs
),
bp AS (
    SELECT bp.benchmark_id, p.*
    FROM benchmark_pair AS bp
    JOIN pair_facts AS p ON p.pair_id = bp.pair_id
),
sets AS (
    SELECT DISTINCT benchmark_id, item_id, set_id FROM bp
),
questions AS (
    SELECT
        s.benchmark_id,
        s.item_id,
        CASE WHEN trim(q.question) = '' THEN 0 ELSE len(string_split_regex(trim(q.question), '\s+')) END AS words
    FROM sets AS s
    JOIN distractor_set AS ds ON ds.id = s.set_id
    JOIN qa AS q ON q.id = ds.qa_id
),
answers AS (
    SELECT s.benchmark_id, w.rating, w.words
    FROM sets AS s
    JOIN answer_words AS w ON w.set_id = s.set_id
),
per_benchmark AS (
    SELECT
        b.id AS benchmark_id,
        b.name AS benchmark,
        (SELECT count(*) FROM benchmark_question AS q WHERE q.benchmark_id = b.id) AS sampled_questions,
        (SELECT count(DISTINCT item_id) FROM bp WHERE bp.benchmark_id = b.id) AS benchmark_questions,
        (SELECT count(*) FROM bp WHERE bp.benchmark_id = b.id) AS pairs,
        (SELECT avg(words) FROM questions AS q WHERE q.benchmark_id = b.id) AS question_words_mean,
        (SELECT max(words) FROM questions AS q WHERE q.benchmark_id = b.id) AS question_words_max,
        (SELECT avg(words) FROM answers AS a WHERE a.benchmark_id = b.id AND a.rating = 5) AS gold_words_mean,
        (SELECT max(words) FROM answers AS a WHERE a.benchmark_id = b.id AND a.rating = 5) AS gold_words_max,
        (SELECT avg(words) FROM answers AS a WHERE a.benchmark_id = b.id AND a.rating < 5) AS degraded_words_mean,
        (SELECT max(words) FROM answers AS a WHERE a.benchmark_id = b.id AND a.rating < 5) AS degraded_words_max,
        (SELECT avg(better_words - worse_words) FROM bp WHERE bp.benchmark_id = b.id) AS chosen_minus_rejected_words,
        (SELECT avg(CASE WHEN better_words > worse_words THEN 1.0 ELSE 0.0 END) FROM bp WHERE bp.benchmark_id = b.id)
            AS longer_answer_wins
    FROM benchmark AS b
)
SELECT pb.benchmark_id, pb.benchmark, c.*, pb.* EXCLUDE (benchmark_id, benchmark)
FROM corpus AS c
LEFT JOIN per_benchmark AS pb ON true
