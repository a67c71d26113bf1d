"""A build's projected cost three ways (issue 15): online, by batch, and by batch with context caching.

Built on ``estimate.project_cost``'s per-role calls and tokens. *Batch*: each role whose provider has a
batch API pays ``1 − batch_discount`` of its token price (local models and providers without one pay
the online price). *Batch + cache*: input another call of the same item already sent to the same model is
read from a context cache at ``cached_input`` — D4 reads C3's clips and transcripts, D1 the generator's
clips, each difficulty judge's evidence is shared by the ten pairs of a question — and the cache's
storage is paid for [batch] cache_ttl_s; each role takes the cheaper of its batch price and its cached
price, and a cache is read inside a batch only where the provider's batch honours it (not DashScope's,
whose batches report no cache hits: such a role is then cached online). A model with no cached-input
price gains nothing from a cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from playlisteval.config import Settings
from playlisteval.models import pricing
from playlisteval.models.batch.api import has_batch_api
from playlisteval.models.estimate import PAIRS_PER_ITEM, Projection, RoleCost
from playlisteval.models.request import Usage

#: providers whose batches read context caches (DashScope's report no cache hits inside a batch)
CACHES_IN_BATCH = ("gemini", "openai", "sim")


@dataclass(frozen=True)
class ModeCost:
    role: RoleCost
    online: float  # USD per call
    batch: float
    cached: float  # batch + context cache, storage included
    batched: bool  # the role has a batch price
    cached_tokens: int  # input tokens per call read from a cache


def _shared_input(settings: Settings, projection: Projection) -> dict[str, tuple[str, int, float, int]]:
    """role → (the role that sent the shared input first, tokens shared, share of this role's calls that
    find them cached, calls that read one cache)."""
    e, b = settings.estimate, settings.build
    s = projection.segment_s
    clips_verify = int(2 * s * b.verify_fps * e.tokens_per_frame + 2 * s / 60 * e.transcript_tokens_per_min)
    clips_gen = int(2 * s * (b.gen_fps * e.tokens_per_frame + e.audio_tokens_per_s))
    evidence = e.judge_frames * e.tokens_per_frame
    later = PAIRS_PER_ITEM - 1
    return {"D4": ("C3", clips_verify, 1.0, 1), "D1": ("B", clips_gen, 1.0, 1),
            "F_first": ("F_first", evidence, later / PAIRS_PER_ITEM, later),
            "F_second": ("F_second", evidence, later / PAIRS_PER_ITEM, later)}


def mode_costs(settings: Settings, projection: Projection) -> list[ModeCost]:
    shared = _shared_input(settings, projection)
    specs = {r.role: r.spec for r in projection.roles}
    out = []
    for r in projection.roles:
        price = settings.price_for(r.spec)
        batched = has_batch_api(r.spec.split("/", 1)[0]) and pricing.batchable(price)
        online = pricing.usd(price, r.usage)
        batch = pricing.usd(price, r.usage, batch=batched)
        cached_tokens, storage = 0, 0.0
        first = shared.get(r.role)
        if first is not None and specs.get(first[0]) == r.spec and price.cached_input is not None:
            tokens = min(first[1], r.usage.input_tokens)
            cached_tokens = int(tokens * first[2])
            # one cache per item, kept for its lifetime, shared by the calls that read it
            storage = pricing.storage_usd(price, tokens, settings.batch.cache_ttl_s) * first[2] / first[3]
        usage = Usage(**{**r.usage.model_dump(), "cached_input_tokens": cached_tokens})
        in_batch = batched and r.spec.split("/", 1)[0] in CACHES_IN_BATCH
        cached = min(batch, pricing.usd(price, usage, batch=in_batch) + storage)
        out.append(ModeCost(r, online, batch, cached, batched, cached_tokens))
    return out


def totals(costs: list[ModeCost]) -> tuple[float, float, float]:
    """USD per seed: online, batch, batch + cache."""
    return (sum(c.online * c.role.calls_per_seed for c in costs), sum(c.batch * c.role.calls_per_seed for c in costs),
            sum(c.cached * c.role.calls_per_seed for c in costs))
