"""The value types the settings' sections are checked with (issue 14) and the base of every section.

A pattern made by ``one_of`` is remembered in ``CHOICES`` so that an error can list what it allows
(config/source.py says which key, and where it came from).
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    model_validator,
)

# value ranges, checked when the settings load (issue 14); config_source.py says which key, and where from
Share = Annotated[float, Field(ge=0, le=1)]  # a probability or a share
Cosine = Annotated[float, Field(ge=-1, le=1)]
AtLeastOne = Annotated[float, Field(ge=1)]
GreyLevel = Annotated[float, Field(ge=0, le=255)]
Crf = Annotated[int, Field(ge=0, le=51)]  # x264 quality
Port = Annotated[int, Field(ge=0, le=65535)]
Size = tuple[PositiveInt, PositiveInt]  # (width, height)
NonEmpty = Annotated[str, Field(min_length=1)]
ModelSpec = Annotated[str, Field(pattern=r"^[^/\s]+/\S.*$")]  # "provider/model"
BrokerUrl = Annotated[str, Field(pattern=r"^(memory|redis|rediss)://")]
#: pattern → the choices it allows, so an error can list them
CHOICES: dict[str, tuple[str, ...]] = {}


def one_of(*choices: str) -> str:
    """The pattern of a string that must be one of ``choices`` (remembered, so an error can list them)."""
    pattern = "^(" + "|".join(re.escape(c) for c in choices) + ")$"
    CHOICES[pattern] = choices
    return pattern


Evidence = Annotated[str, Field(pattern=one_of("retrieved", "uniform", "oracle"))]
AsrDevice = Annotated[str, Field(pattern=one_of("cpu", "cuda", "auto"))]
OcrBackend = Annotated[str, Field(pattern=one_of("rapidocr", "none"))]
OcrDetector = Annotated[str, Field(pattern=one_of("auto", "int8", "float"))]
Resolution = Annotated[str, Field(pattern=one_of("", "low", "medium", "high"))]
ResponseFormat = Annotated[str, Field(pattern=one_of("json_schema", "json_object"))]
VllmVideo = Annotated[str, Field(pattern=one_of("frames", "video_url"))]
QwenVideo = Annotated[str, Field(pattern=one_of("frames", "video_url"))]
ImageDetail = Annotated[str, Field(pattern=one_of("low", "high", "auto"))]
Dtype = Annotated[str, Field(pattern=one_of("auto", "float32", "bfloat16", "float16"))]
Modality = Annotated[str, Field(pattern=one_of("frames+transcript", "frames", "transcript", "frames+audio", "audio"))]
AudioMode = Annotated[str, Field(pattern=one_of("track", "turns"))]
ColdFrames = Annotated[str, Field(pattern=one_of("keyframe", "exact"))]
AudioFormat = Annotated[str, Field(pattern=one_of("mp3", "m4a", "wav"))]
Thinking = Annotated[str, Field(pattern=one_of("", "minimal", "low", "medium", "high"))]
FrameLimitRule = Annotated[str, Field(pattern=one_of("subsample", "error"))]
CompletionWindow = Annotated[str, Field(pattern=one_of("24h"))]
#: the providers that speak the OpenAI wire and so may have a server per model ([endpoints], issue 42)
ENDPOINT_PROVIDERS = ("openai", "qwen", "vllm")


def _server_url(url: str) -> str:
    """An [endpoints] value: an http(s) URL with a host (the server's OpenAI base URL, ``…/v1``)."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError(f"{url!r} is not a server URL: write http://host:port/v1 (or https://…)")
    return url.strip()


ServerUrl = Annotated[str, AfterValidator(_server_url)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: (low, high) keys whose values must not be in the wrong order
    ordered: ClassVar[tuple[tuple[str, str], ...]] = ()

    @model_validator(mode="after")
    def _in_order(self) -> Section:
        for low, high in self.ordered:
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{low} = {getattr(self, low)} is more than {high} = {getattr(self, high)}")
        return self

