"""A video's texts embedded while its frames are still being read (issue 43: the embedding tail).

A text embedder embeds a chunk's transcript and each of its on-screen lines on their own
(``embedders.embed_chunks``), so none of those vectors waits for the whole video: the transcripts exist
once captions are read or speech recognised, a chunk's lines once its frames are OCR'd. Embedded at the
end, as before, they were a tail in series after the last chunk's OCR (0.6–0.8 s of a 5-minute video's
~6 s on two cores, with one core idle); here one thread embeds them as they come, beside the decoding and
OCR of the chunks after, and the model loads there too. ``embed_chunks`` then finds them in ``known``.

Determinism: each job is one ``embed_texts`` call on a fixed set of texts (all transcripts; one chunk's
lines), run in the order submitted on a single thread, and a text keeps the vector of the first job that
embedded it — so the vectors are the same on every run, whatever the timing. They can differ from
embedding all of a video's texts in one call in the last float bits only (a batch's other rows never
change a row: padding is masked; ``tests/test_length_batches.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from playlisteval.index import phases
from playlisteval.index.rows import Embedder


class EmbedAhead:
    """Embeds texts on a thread of its own, in submission order; ``known()`` waits and hands them over."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="embed")
        self.jobs: list[Future[dict[str, np.ndarray]]] = []

    def submit(self, texts: Callable[[], list[str]]) -> None:
        """Embed the texts ``texts()`` returns (called on the embedding thread: it may wait for them)."""
        self.jobs.append(self.pool.submit(self._embed, texts))

    def _embed(self, texts: Callable[[], list[str]]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(t.strip() for t in texts() if t.strip()))
        if not wanted:
            return {}
        with phases.timed("embedding"):
            rows = self.embedder.embed_texts(wanted)
        return dict(zip(wanted, rows, strict=True))

    def known(self) -> dict[str, np.ndarray]:
        """Every text embedded so far, once all submitted jobs are done; a job that failed adds nothing
        (its texts are embedded again at the end, where the failure is raised)."""
        out: dict[str, np.ndarray] = {}
        for job in self.jobs:
            try:
                found = job.result()
            except Exception:  # noqa: BLE001  (raised again, with its context, by the embedding at the end)
                continue
            for text, row in found.items():
                out.setdefault(text, row)
        return out

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
