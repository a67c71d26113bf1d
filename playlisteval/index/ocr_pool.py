"""OCR engines by their ONNX thread count, each loaded once and lent to one reader at a time (index/ocr.py),
and loaded ahead of a video's first frames when asked (``warm``, issue 43).

An engine keeps per-call state, so two threads never share one at a time; but engines are not tied to
threads either (a thread per video or per message would load the models again and again): idle engines wait
here, a reading takes one (loading one only when all are busy) and gives it back. So a process holds as many
engines as it ever read with at once.

Loading is Python work under the GIL (rapidocr's import and configuration, ~0.9 CPU-s for the first engine
of a process on the bench host), and the index used to do it only when the first chunk's frames were
decoded, one thing after the other. ``warm`` starts it beside the video's probe and first decoding, which
run outside the GIL.
"""

from __future__ import annotations

import gc
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from playlisteval.logs import get_logger

log = get_logger(__name__)


class EnginePool:
    def __init__(self, load: Callable[[int], Any]) -> None:
        self._load = load
        self.threads = 1  # ONNX threads of the engines a reading takes when it names none
        self.loaded = 0  # engines made by this process
        self.froze = False  # a finished warm-up froze what exists out of the cyclic collector (once)
        self._idle: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._given = threading.Condition(self._lock)  # an engine was given back, or the warm-up ended
        self._warm: threading.Thread | None = None

    def take(self, threads: int | None = None) -> tuple[int, Any]:
        """An idle engine of ``threads`` ONNX threads (the pool's setting when None), loaded if none is idle.
        While engines are being loaded ahead, this waits for the next one rather than loading one more."""
        with self._lock:
            threads = threads or self.threads
            while not self._idle.get(threads) and self._warming() and self._warm is not threading.current_thread():
                self._given.wait()
            if self._idle.get(threads):
                return threads, self._idle[threads].pop()
            self.loaded += 1
        return threads, self._load(threads)

    def give(self, threads: int, engine: Any) -> None:
        with self._lock:
            self._idle.setdefault(threads, []).append(engine)
            self._given.notify_all()

    def _warming(self) -> bool:
        return self._warm is not None and self._warm.is_alive()

    def warm(self, *counts: int) -> None:
        """Load engines of these ONNX thread counts (0: the pool's setting), as many as named less those
        idle, in that order, on a thread of their own; each is lent as soon as it is loaded. What fails
        here is left to the first reading, which loads again and raises it there, naming the video."""
        with self._lock:
            if self._warming():
                return
            wanted = Counter(count or self.threads for count in counts)
            short = [threads for threads, n in wanted.items() for _ in range(n - len(self._idle.get(threads, ())))]
            if not short:
                return
            self._warm = threading.Thread(target=self._loading, args=(short,),
                                          name="ocr-warm", daemon=True)
            self._warm.start()

    def _loading(self, counts: list[int]) -> None:
        try:
            for threads in counts:
                with self._lock:
                    self.loaded += 1
                self.give(threads, self._load(threads))
        except Exception as exc:  # noqa: BLE001  (the reading that needs the engine raises it again)
            log.info("ocr.warm_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        finally:
            # the first engines' configuration (OmegaConf: many linked objects) lives as long as the process:
            # the cyclic collector stops walking it (as `index` does with start-up's objects; 2 full
            # collections instead of 3 in a 5-minute index). Once: a freeze also keeps what other threads
            # hold at that moment, which a long-lived worker should not do again and again
            if not self.froze:
                self.froze = True
                gc.freeze()
            with self._lock:
                self._warm = None
                self._given.notify_all()
