"""The fps each video-reading role got (issue 42), beside the SPEC's: C3 and D4 (0.5 fps), the generator's
B and D1 (0.5 fps), H2's grounding (2 fps).

A provider records per clip what it asked and what it sent with its reply (``raw["frames"]``: the fps sent
is frames sent / seconds covered for frames, the fps the API samples at for a video file; see
models/providers/media_parts.py). This reads those records from the cached replies of a role's latest calls
— at most ``LATEST`` of them, so `funnel` costs the same at any store size — and sums them up. A role whose
calls carry no record (the offline sim, replies cached before the record existed) says so rather than
showing a number.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import JSON, text
from sqlalchemy.engine import Engine

from playlisteval.store.engine import read_core

#: the frame rate the SPEC gives each video-reading role (B1, C3, D1 "the same two clips", D4 "same video
#: inputs" as C3, H2); what a project asks may differ ([build] gen_fps / verify_fps, [human] grounding_fps)
SPEC_FPS: dict[str, float] = {"B": 0.5, "C3": 0.5, "D1": 0.5, "D4": 0.5, "H": 2.0}
#: the gates of the funnel that read video, and the role whose calls they are
GATE_ROLES: dict[str, str] = {"C3": "C3", "D4": "D4"}
LATEST = 200  # calls read per role

_REPLIES = text(
    "SELECT response FROM response_cache WHERE request_hash IN (SELECT request_hash FROM model_call "
    "WHERE role = :role AND status IN ('ok', 'cached') ORDER BY id DESC LIMIT :n)"
).columns(response=JSON)


@dataclass(frozen=True)
class RoleFps:
    role: str
    spec: float | None  # the SPEC's fps for the role
    calls: int  # replies with a record (of the latest LATEST calls)
    asked: list[float]  # the fps the requests asked, distinct
    sent_min: float | None  # the lowest and highest fps a clip got
    sent_max: float | None
    sent_as: list[str]  # how: "video" (a file the API samples), "frame_list" (one part), "images" (one each)
    thinned: int  # replies in which a clip got fewer fps than asked (an image or frame limit)

    def describe(self) -> str:
        """One line: "C3 0.5 fps (SPEC 0.5) as video, 2 calls" or the thinned fps and how often."""
        spec = f" (SPEC {self.spec:g})" if self.spec is not None else ""
        if not self.calls or self.sent_min is None or self.sent_max is None:
            return f"{self.role}: no fps recorded{spec}"
        got = f"{self.sent_min:.3g}" if self.sent_min == self.sent_max else f"{self.sent_min:.3g}–{self.sent_max:.3g}"
        asked = "/".join(f"{a:g}" for a in self.asked)
        line = f"{self.role} {got} fps of {asked} asked{spec} as {', '.join(self.sent_as)}, {self.calls} call(s)"
        return line + (f", thinned in {self.thinned}" if self.thinned else "")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.describe()}


def role_fps(engine: Engine, role: str, latest: int = LATEST) -> RoleFps:
    """What the latest calls of ``role`` recorded about their clips' fps."""
    records: list[list[dict[str, Any]]] = []
    with read_core(engine) as s:
        for (response,) in s.execute(_REPLIES, {"role": role, "n": latest}):
            frames = ((response or {}).get("raw") or {}).get("frames") if isinstance(response, dict) else None
            if isinstance(frames, list) and frames:
                records.append([f for f in frames if isinstance(f, dict)])
    clips = [f for r in records for f in r]
    sent = [float(f["fps_sent"]) for f in clips if isinstance(f.get("fps_sent"), int | float)]
    return RoleFps(
        role=role, spec=SPEC_FPS.get(role), calls=len(records),
        asked=sorted({float(f["fps_asked"]) for f in clips if isinstance(f.get("fps_asked"), int | float)}),
        sent_min=min(sent) if sent else None, sent_max=max(sent) if sent else None,
        sent_as=sorted({str(f.get("sent_as") or "images") for f in clips}),
        thinned=sum(1 for r in records if any(f.get("subsampled") for f in r)),
    )


def gate_fps(engine: Engine) -> dict[str, dict[str, Any]]:
    """Per video gate of the funnel (C3, D4): ``RoleFps`` as a dict, with its one-line ``text``."""
    return {gate: role_fps(engine, role).as_dict() for gate, role in GATE_ROLES.items()}


def call_fps(frames: Any) -> str:
    """One call's record (``raw["frames"]``) as a few words: "0.142 fps of 0.5 asked (frame_list, thinned)";
    "" when the call recorded none (no clip, or a reply from before the record)."""
    if not isinstance(frames, list):
        return ""
    clips = [f for f in frames if isinstance(f, dict) and isinstance(f.get("fps_sent"), int | float)]
    if not clips:
        return ""
    sent = sorted({float(f["fps_sent"]) for f in clips})
    asked = sorted({float(f["fps_asked"]) for f in clips if isinstance(f.get("fps_asked"), int | float)})
    how = sorted({str(f.get("sent_as") or "images") for f in clips})
    thinned = ", thinned" if any(f.get("subsampled") for f in clips) else ""
    return (f"{'/'.join(f'{v:.3g}' for v in sent)} fps of {'/'.join(f'{v:g}' for v in asked)} asked "
            f"({', '.join(how)}{thinned})")
