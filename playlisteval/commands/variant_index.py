"""`playlisteval index --variant NAME …`: a named retriever variant defined and its vectors made beside the
default ones (issue 20, deliverable 8; index/variants.py), after the ordinary index of what is new."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.text import Text

from playlisteval.commands import exitcodes
from playlisteval.commands.support import console, err_console, progress_bar

VARIANT_HELP = ("Also make the vectors of the retriever variant NAME: a named recipe (embedder, --modality, "
                "--frames-per-chunk, --dims) stored beside the default vectors; `eval retrieve --variant NAME` "
                "scores it. A new NAME needs at least one of those options; a known one keeps its recipe.")
MODALITY_HELP = ("What the variant's chunk vectors read: transcript (audio transcript only), ocr (on-screen text "
                 "only), text (both), frames, frames+transcript, frames+text (frames need qwen3-vl-embedding "
                 "and its weights in [index] vl_model).")


def make_variant(settings: Any, engine: Any, name: str, embedder: str | None, modality: str | None, frames: int,
                 dims: int, as_json: bool) -> tuple[dict[str, Any], int]:
    """Define (or look up) the variant and make its vectors; (its JSON, exit status)."""
    from playlisteval.actors.indexing import index_videos as engine_dispatch
    from playlisteval.index import variants

    variant = variants.define(engine, settings, name, embedder, modality, frames, dims)
    with progress_bar("variant", "", enabled=not as_json) as tick:
        report = variants.make_vectors(settings, engine, variant, engine_dispatch, tick)
    if not as_json:
        console.print(f"variant {report.name!r} ({report.embedder}: {report.modality}, {report.dims} dims): "
                      f"{report.embedded} vector(s) made, {report.reused} kept over {report.videos} video(s)",
                      highlight=False)
        for why in report.failed:
            err_console.print(Text(f"  no vectors: {why}"))
        if not report.failed:
            console.print(f"next: `playlisteval eval retrieve --variant {report.name}`", highlight=False)
    return asdict(report), exitcodes.INCOMPLETE if report.failed else exitcodes.DONE

