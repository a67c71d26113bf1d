"""Text models on the CPU through llama.cpp, in-process (issue 24; extra ``llm``: llama-cpp-python).

Why in-process and not the ``vllm`` provider against ``python -m llama_cpp.server``: llama-cpp-python
0.3.36 constrains output only for ``response_format = {"type": "json_object", "schema": …}``; the
``json_schema`` form the OpenAI-compatible provider sends is accepted and ignored, so the server path
would be unconstrained. In-process there is no server to start, watch and stop, and llama.cpp keeps the
KV cache of the previous prompt: a call that shares its opening with the one before (C2.1's answerer
and the same transcripts, D3's two judges) reads only the new tokens — counted as cached input.

Text only: a request with frames, clips or audio is a permanent error naming the model. Each reply is
constrained by the role's response schema (the strict form the hosted APIs get) through llama.cpp's
JSON-schema grammar, its free strings bounded so the object closes within the reply's token limit. A
prompt that does not fit the context with its reply is a clear permanent error before anything runs; a
reply still generating after the runner's timeout is cut and raised as a transient error. Usage:
llama.cpp's own token counts, and the call's wall time × threads as CPU-seconds,
priced by ``[prices] cpu_hour``. Models are loaded once per process; one lock per model serialises calls.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError, ProviderNotAvailable, TransientModelError
from playlisteval.logs import get_logger
from playlisteval.models.providers.llama_weights import resolve
from playlisteval.models.providers.wire import strict_json_schema
from playlisteval.models.request import ModelRequest, ProviderReply, TextPart, Usage

log = get_logger(__name__)
SEED = 0  # llama.cpp's sampler seed: with temperature 0 (the default here) replies are greedy anyway


def _llama_cpp() -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP threads starve a shared machine
    try:
        import llama_cpp
    except ImportError as exc:
        raise ProviderNotAvailable(
            f"llama: llama-cpp-python is not installed (pip install 'playlisteval[llm]', or make llm): {exc}") from exc
    return llama_cpp


@dataclass
class Loaded:
    llm: Any
    path: str
    lock: threading.Lock
    n_ctx: int


class LlamaProvider:
    name = "llama"
    key_env: tuple[str, ...] = ()

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._models: dict[str, Loaded] = {}
        self._lock = threading.Lock()

    def load(self, model: str) -> Loaded:
        with self._lock:
            if model in self._models:
                return self._models[model]
            llama_cpp = _llama_cpp()
            path = resolve(self.settings, model)
            p = self.settings.providers
            started = time.monotonic()
            try:
                llm = llama_cpp.Llama(model_path=str(path), n_ctx=p.llama_n_ctx, n_threads=p.llama_threads,
                                      n_threads_batch=p.llama_threads, n_gpu_layers=0, seed=SEED, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise PermanentModelError(f"llama/{model}: cannot load {path}: {str(exc)[:300]}") from exc
            log.info("llama.loaded", model=model, path=str(path), seconds=round(time.monotonic() - started, 1))
            loaded = Loaded(llm, str(path), threading.Lock(), int(llm.n_ctx()))
            self._models[model] = loaded
            return loaded

    def complete(self, model: str, request: ModelRequest, schema: type[BaseModel] | None,
                 timeout: float) -> ProviderReply:
        others = sorted({p.kind for p in request.parts if not isinstance(p, TextPart)})
        if others:
            raise PermanentModelError(f"llama/{model} is a text-only model: it cannot take {', '.join(others)} "
                                      "(give it a text role, or judge with --modality transcript / none)")
        if request.tools:
            raise PermanentModelError(f"llama/{model}: tool calls are not supported by this provider")
        loaded = self.load(model)
        limit = request.settings.max_output_tokens or self.settings.providers.llama_max_tokens
        prompt, stop = _chat_prompt(loaded.llm, request.text())
        options: dict[str, Any] = {"max_tokens": limit, "temperature": request.settings.temperature or 0.0,
                                   "seed": SEED, "stop": stop}
        if request.settings.top_p is not None:
            options["top_p"] = request.settings.top_p
        with loaded.lock:
            prompt_tokens = len(loaded.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))
            if prompt_tokens + limit > loaded.n_ctx:
                raise PermanentModelError(
                    f"llama/{model}: context overflow — the prompt is {prompt_tokens} tokens and the reply may "
                    f"take {limit}, past the context of {loaded.n_ctx} ([providers] llama_n_ctx; or a shorter "
                    f"max_output_tokens for role {request.role})")
            if schema is not None:  # the role's schema as a grammar: only schema-valid JSON can be sampled
                options["grammar"] = _grammar(schema, limit)
            before = list(loaded.llm._input_ids)  # the previous call's tokens, whose KV llama.cpp kept
            started = time.monotonic()
            late = _Deadline(started + timeout)
            try:
                out = loaded.llm.create_completion(prompt=prompt, stopping_criteria=late.criteria(), **options)
            except ValueError as exc:  # llama.cpp's own "exceed context window" and the like
                raise PermanentModelError(f"llama/{model}: {str(exc)[:300]}") from exc
            seconds = time.monotonic() - started
            if late.passed:
                loaded.llm.reset()  # the cut-short reply is not a prefix worth keeping
                raise TransientModelError(f"llama/{model}: no reply within {timeout:g} s "
                                          "(the runner's timeout_s; the call was cut)")
            usage_in = out.get("usage") or {}
            n_in = int(usage_in.get("prompt_tokens", prompt_tokens))
            reused = _common_prefix(before, list(loaded.llm._input_ids)[:n_in])
        choice = out["choices"][0]
        usage = Usage(input_tokens=n_in, cached_input_tokens=min(reused, n_in),
                      output_tokens=int(usage_in.get("completion_tokens", 0)),
                      cpu_seconds=seconds * self.settings.providers.llama_threads)
        return ProviderReply(text=choice.get("text") or "", usage=usage,
                             finish_reason=choice.get("finish_reason") or "stop",
                             raw={"llama": {"path": loaded.path, "seconds": round(seconds, 3), "reused": reused}})

    def check(self, model: str) -> str:
        llama_cpp = _llama_cpp()
        path = resolve(self.settings, model)
        size = path.stat().st_size / 1e9
        return (f"llama-cpp-python {llama_cpp.__version__}; {path.name} ({size:.2f} GB) at {path}; "
                f"{self.settings.providers.llama_threads} thread(s), context {self.settings.providers.llama_n_ctx}")


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class _Deadline:
    """A stopping criterion that ends generation at the deadline (llama.cpp's chat call takes none, which
    is why the provider formats the chat itself and calls ``create_completion``)."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.passed = False

    def __call__(self, _input_ids: Any, _logits: Any) -> bool:
        self.passed = self.passed or time.monotonic() > self.at
        return self.passed

    def criteria(self) -> Any:
        from llama_cpp import StoppingCriteriaList

        return StoppingCriteriaList([self])


def _chat_prompt(llm: Any, text: str) -> tuple[str, list[str]]:
    """One user turn through the GGUF's own chat template (as llama.cpp's chat API renders it), and the
    texts that end the assistant's turn; ChatML when the file carries no template."""
    from llama_cpp import llama_chat_format

    messages: list[Any] = [{"role": "user", "content": text}]
    template = llm.metadata.get("tokenizer.chat_template")
    if template:
        eos, bos = llm.token_eos(), llm.token_bos()
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template, eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "", stop_token_ids=[eos])
        response = formatter(messages=messages)
    else:
        response = llama_chat_format.format_chatml(messages=messages)
    stop = response.stop if isinstance(response.stop, list) else [response.stop] if response.stop else []
    return response.prompt, [s for s in stop if s]


#: characters per reply token the string bounds assume (English runs ~4; 3 leaves room for JSON and escapes)
CHARS_PER_TOKEN = 3
ITEMS_GUESS = 5  # strings of an array are counted this many times (a D3 ranking has five entries)
#: llama.cpp expands a bounded string into nested optional rules and refuses past ~1000 (the process then
#: crashes when it samples): no string is bounded above this
MAX_STRING = 800


def bounded_schema(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    """The schema with a ``maxLength`` on every free string, sized so the whole object closes within
    ``limit`` reply tokens: a small model asked for "3-5 paragraphs" otherwise writes until the limit cuts
    its JSON, and a cut object is unusable (a checker fault) where a shorter one is judged on its merits."""
    out = copy.deepcopy(schema)
    defs: dict[str, Any] = out.get("$defs", {})
    leaves: dict[int, tuple[dict[str, Any], int]] = {}  # id(node) → (node, times it may appear)

    def walk(node: Any, weight: int) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
                walk(defs[ref[8:]], weight)  # a definition counts where it is used, as often
            if node.get("type") == "string" and "enum" not in node and "pattern" not in node:
                seen = leaves.get(id(node))
                leaves[id(node)] = (node, weight + (seen[1] if seen else 0))
            for key, value in node.items():
                if key != "$defs":
                    walk(value, weight * ITEMS_GUESS if key == "items" else weight)
        elif isinstance(node, list):
            for value in node:
                walk(value, weight)

    walk(out, 1)
    total = sum(w for _, w in leaves.values())
    for node, _ in leaves.values():
        node.setdefault("maxLength", min(MAX_STRING, max(64, limit * CHARS_PER_TOKEN // max(total, 1))))
    return out


def _grammar(schema: type[BaseModel], limit: int) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_json_schema(json.dumps(bounded_schema(strict_json_schema(schema), limit)),
                                         verbose=False)


def schema_json(schema: type[BaseModel]) -> str:
    """The grammar's schema as sent (for tests and `show`)."""
    return json.dumps(strict_json_schema(schema), sort_keys=True)
