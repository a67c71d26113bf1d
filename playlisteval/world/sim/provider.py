"""The sim provider: plays every model role from the known facts of synthetic videos (DESIGN, offline).

It is not a model and never says it is one: explanations start with "[sim]" and replies carry
``raw["sim"] = True``. Outcomes are deterministic: the content of a reply is a function of the build
seed, the model name and the request (attempt included, so a new attempt may turn out differently).
Faults (429s, malformed JSON, refusals) are drawn per call instead, so a retry of the very same
request can succeed, as it would against a real service.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from playlisteval.config import SimSettings
from playlisteval.errors import PermanentModelError, TransientModelError
from playlisteval.models.request import (
    AudioPart,
    ImagePart,
    ModelRequest,
    ProviderReply,
    Usage,
    VideoPart,
    stable_dump,
)
from playlisteval.prompts.reward import REWARD_TEMPLATE
from playlisteval.world.sim import agent as sim_agent
from playlisteval.world.sim import human as sim_human
from playlisteval.world.sim import judge as sim_judge
from playlisteval.world.sim import phase1 as sim_phase1
from playlisteval.world.sim import phase2 as sim_phase2
from playlisteval.world.sim import reward as sim_reward
from playlisteval.world.sim.context import SimContext

# Token accounting, shaped like the hosted APIs' (Gemini: 258 tokens per frame, 32 per audio second),
# so that cost reports over sim runs have realistic proportions.
TOKENS_PER_FRAME = 258
TOKENS_PER_AUDIO_SECOND = 32
REFUSAL = "I'm sorry, but I can't help with that request."

_ROLES: dict[str, Callable[[SimContext], dict[str, Any] | str]] = {
    "B": sim_phase1.generate_qa,
    "C2_transcript_answer": lambda c: sim_phase1.text_answer(c, c.settings.transcript_answerable),
    "C2_parametric_answer_a": lambda c: sim_phase1.text_answer(c, c.settings.parametric_answerable),
    "C2_parametric_answer_b": lambda c: sim_phase1.text_answer(c, c.settings.parametric_answerable),
    "C2_transcript_verify": sim_phase1.verify,
    "C2_parametric_verify_a": sim_phase1.verify,
    "C2_parametric_verify_b": sim_phase1.verify,
    "C3": sim_phase1.grounding,
    "D1": sim_phase2.distractors,
    "D3_first": sim_phase2.text_ranking,
    "D3_second": sim_phase2.text_ranking,
    "D4": sim_phase2.video_ranking,
    "F_first": sim_judge.judge,
    "F_second": sim_judge.judge,
    "G": sim_judge.judge,
    "H": sim_human.ground_evidence,
}
ROLES: frozenset[str] = frozenset(_ROLES)


def request_digest(request: ModelRequest) -> str:
    """A hash of everything the request says (text, media references, settings, attempt).

    Media are named by file name, not full path, so the same collection behaves the same wherever
    its project lives (a fresh clone's demo, a test's temporary folder).
    """
    data = stable_dump(request, mode="json")  # fields added later count only once set: old draws stay put
    for part in data["parts"]:
        for key in ("path", "source"):
            if part.get(key):
                part[key] = Path(part[key]).name
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _rng(*keys: object) -> random.Random:
    digest = hashlib.sha256("|".join(map(str, keys)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def estimate_usage(request: ModelRequest, reply: str) -> Usage:
    """Tokens in: text chars / 4, plus a fixed number per sampled frame and per audio second."""
    tokens = len(request.text()) // 4
    for part in request.parts:
        if isinstance(part, VideoPart):
            seconds = max(0.0, part.end - part.start)
            tokens += int(seconds * part.fps) * TOKENS_PER_FRAME
            tokens += int(seconds * TOKENS_PER_AUDIO_SECOND) if part.audio else 0
        elif isinstance(part, ImagePart):
            tokens += TOKENS_PER_FRAME
        elif isinstance(part, AudioPart) and part.start is not None and part.end is not None:
            tokens += int((part.end - part.start) * TOKENS_PER_AUDIO_SECOND)
    return Usage(input_tokens=max(1, tokens), output_tokens=max(1, len(reply) // 4))


class SimProvider:
    name = "sim"

    def __init__(self, settings: SimSettings, seed: int) -> None:
        self.settings = settings
        self.seed = seed
        self._calls: dict[str, int] = {}  # request key -> calls so far, so each retry draws anew
        self._lock = threading.Lock()

    def is_reward_model(self, model: str) -> bool:
        """Whether ``sim/<model>`` plays a classifier reward model (world/sim/reward.py)."""
        return sim_reward.is_reward_model(model)

    def complete(
        self, model: str, request: ModelRequest, schema: type[BaseModel] | None, timeout: float
    ) -> ProviderReply:
        run = _ROLES.get(request.role)
        if sim_reward.is_reward_model(model):  # a reward model scores one answer, whatever the role (SPEC G7)
            if request.template != REWARD_TEMPLATE:
                asked = request.template or "free"
                raise PermanentModelError(f"sim/{model} is a reward model: it scores one answer at a time "
                                          f"({REWARD_TEMPLATE}), it cannot answer a {asked} prompt")
            run = sim_reward.score
        if run is None:
            raise PermanentModelError(f"sim: no behaviour for role {request.role!r}")
        digest = request_digest(request)
        key = f"{model}|{digest}"
        with self._lock:
            if len(self._calls) > 200_000:  # bounded memory over long runs; old keys rarely recur
                self._calls.clear()
            nth = self._calls.get(key, 0)
            self._calls[key] = nth + 1
        s = self.settings
        if s.latency_s > 0:
            time.sleep(min(s.latency_s, timeout))
            if s.latency_s > timeout:
                raise TransientModelError(f"sim: timed out after {timeout:g} s")
        faults = _rng(self.seed, key, "faults", nth)
        if faults.random() < s.rate_limited:
            raise TransientModelError("sim: 429 rate limited", retry_after=0.01)
        # a classifier returns a number, never text: it can be rate limited, but it neither refuses nor
        # writes malformed JSON (the draws are still made, so other models' faults stay where they were)
        scorer = sim_reward.is_reward_model(model)
        refused = faults.random() < s.refusal and not scorer
        malformed = faults.random() < s.malformed_json and not scorer
        raw: dict[str, Any] = {"sim": True, "role": request.role, "model": model}
        if refused:
            return self._reply(request, REFUSAL, "refusal", {**raw, "fault": "refusal"})
        ctx = SimContext(request, s, model, _rng(self.seed, model, digest))
        if request.tools:  # the agentic judge (world/sim/agent.py): a turn may be tool calls
            text, calls = sim_agent.act(ctx)
            if calls:
                reply = self._reply(request, text, "tool_calls", raw)
                reply.tool_calls = calls
                return reply
            out: dict[str, Any] | str = text
        else:
            out = run(ctx)
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        if malformed:
            text, raw = _malform(text, isinstance(out, str)), {**raw, "fault": "malformed"}
        return self._reply(request, text, "stop", raw)

    @staticmethod
    def _reply(request: ModelRequest, text: str, finish: str, raw: dict[str, Any]) -> ProviderReply:
        return ProviderReply(text=text, usage=estimate_usage(request, text), finish_reason=finish, raw=raw)


def _malform(text: str, free_text: bool) -> str:
    """Unparseable output: JSON cut off mid-way; a judge's reasoning with its verdict lost."""
    if free_text:
        return text.split("[[")[0].rstrip() + "\n\nVerdict: (the sim dropped it)"
    return "Here is the JSON you asked for:\n" + text[: max(1, len(text) // 2)]
