-- The units an interval's bootstrap may resample (issue 9), one row per item: the question itself, the
-- video of its first segment, and that video's playlist ([analytics] bootstrap_unit picks one). The
-- pairs of one question share its evidence and gold answer, so they are resampled together, never alone.
SELECT
    i.id AS item_id,
    'question ' || i.id AS question,
    coalesce('video ' || v.id, 'question ' || i.id) AS video,
    coalesce('playlist ' || v.playlist_id, 'question ' || i.id) AS playlist
FROM item AS i
LEFT JOIN seed AS s ON s.id = i.seed_id
LEFT JOIN segment AS g ON g.id = s.segment1_id
LEFT JOIN video AS v ON v.id = g.video_id
