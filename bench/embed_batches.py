"""What cutting MiniLM batches by token length saves (issue 43, deliverable 2), on the index's text mix.

A 5-minute video of bench/camera_media.py gives chunks of one long transcript each (captions, ~100
tokens) and a few short on-screen lines (a clock, a slide line, a ticker: 5-15 tokens). The same texts
are embedded both ways on one BLAS thread, alternating ``--repeat`` times, with the CPU seconds of each:
fixed batches of 32 of the length-sorted texts (the old way: short lines padded to a transcript's length)
and ``length_batches`` (cut where length jumps). The vectors must agree within 1e-6.

    .venv/bin/python -m bench embed-batches [--chunks 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: bench/embed_batches.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.narration import sentences
from playlisteval.index.length_batches import length_batches, padded_tokens


def text_mix(chunks: int) -> list[str]:
    """Per chunk: a transcript of ~5 narrated sentences and three on-screen lines, as embed_chunks orders them."""
    said = sentences()
    texts: list[str] = []
    for c in range(chunks):
        texts.append(" ".join(said[(c * 5 + k) % len(said)] for k in range(5)))
        texts += [f"00:{c // 2:02d}:{c % 2 * 30:02d}.000 frame {c * 900}", f"Slide {c // 2 + 1}: glacier moraine",
                  "LIVE ice ages news more after the break"]
    return texts


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench embed-batches", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from playlisteval.index.embedders import MiniLMEmbedder

    model = MiniLMEmbedder()._load()
    texts = text_mix(args.chunks)
    tokens = model.tokenize(texts)
    lengths = [len(t) for t in tokens]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    ways = {"fixed 32": [order[i:i + 32] for i in range(0, len(order), 32)], "by length": length_batches(lengths)}
    vectors: dict[str, np.ndarray] = {}
    spent: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, batches in ways.items():
            t0, out = cpu(), np.zeros((len(texts), 384), dtype=np.float32)
            for rows in batches:
                out[rows] = model.encode_tokens([tokens[i] for i in rows])
            spent[name].append(cpu() - t0)
            vectors[name] = out
    diff = float(np.abs(vectors["fixed 32"] - vectors["by length"]).max())
    print(f"{len(texts)} texts ({args.chunks} chunks), {sum(lengths)} tokens", flush=True)
    for name, batches in ways.items():
        print(f"  {name:<10} {len(batches):3d} batches, {padded_tokens(lengths, batches):6d} padded tokens, "
              f"CPU {min(spent[name]):.3f}-{max(spent[name]):.3f} s over {args.repeat} runs", flush=True)
    print(f"  CPU saved: {1 - min(spent['by length']) / min(spent['fixed 32']):.0%} (fastest runs); "
          f"vectors differ by at most {diff:.1e} ({'met' if diff < 1e-6 else 'NOT met'}: < 1e-6)", flush=True)
    return 0 if diff < 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
