-- The units an interval may be clustered by (issues 9, 40), one row per item: the question itself, the
-- video of each of its two segments and those videos' playlists ([analytics] bootstrap_unit picks one).
-- The pairs of one question share its evidence and gold answer, so they are one cluster, never apart; a
-- question citing two videos belongs to both (video, video_b): its clusters are dyadic
-- (analytics/small_sample.py dyadic_variance). Without a segment the question stands for its own unit.
SELECT
    i.id AS item_id,
    'question ' || i.id AS question,
    coalesce('video ' || v.id, 'question ' || i.id) AS video,
    coalesce('playlist ' || v.playlist_id, 'question ' || i.id) AS playlist,
    coalesce('video ' || v2.id, 'video ' || v.id, 'question ' || i.id) AS video_b,
    coalesce('playlist ' || v2.playlist_id, 'playlist ' || v.playlist_id, 'question ' || i.id) AS playlist_b
FROM item AS i
LEFT JOIN seed AS s ON s.id = i.seed_id
LEFT JOIN segment AS g ON g.id = s.segment1_id
LEFT JOIN video AS v ON v.id = g.video_id
LEFT JOIN segment AS g2 ON g2.id = s.segment2_id
LEFT JOIN video AS v2 ON v2.id = g2.video_id
