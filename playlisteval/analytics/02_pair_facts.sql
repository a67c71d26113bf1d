-- One row per preference pair (SPEC F1): its item's domain, the rating gap, whether the difficulty gate
-- kept it, and the length in words of the better (chosen) and worse (rejected) answers.
SELECT
    pr.id AS pair_id,
    pr.item_id,
    pr.set_id,
    f.domain,
    pr.better_rating,
    pr.worse_rating,
    pr.gap,
    pr.kept,
    better.words AS better_words,
    worse.words AS worse_words
FROM pair AS pr
JOIN item_facts AS f ON f.item_id = pr.item_id
LEFT JOIN answer_words AS better ON better.set_id = pr.set_id AND better.rating = pr.better_rating
LEFT JOIN answer_words AS worse ON worse.set_id = pr.set_id AND worse.rating = pr.worse_rating
