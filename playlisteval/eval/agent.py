"""The agentic judge (SPEC G6, issue 20; paper appendix C.2): a judge that finds its own evidence.

Instead of a fixed sample of frames the judge gets the corpus listing, the G6 prompt (``g6_agent.j2``)
and three tools (eval/agent_tools.py) through its provider's function calling. Each turn is one call
through the runner (cache, ledger, budget), with the whole conversation so far as the request: the
model's earlier turns as tool-call parts, each result as a tool-result part and the frames it fetched.
A pair has at most ``[eval] agent_max_steps`` turns and ``agent_max_tokens`` tokens; the last turn is
asked with the tools declared but not callable and a line saying so, so the judge must answer.

Every tool call, its arguments and what it returned is recorded with the judgment (``evidence.agent``),
and the chunks and frames it served are the judgment's evidence, as for a fixed-evidence judge. Replay:
the tools are deterministic and every turn's request hashes what came before it, so judging a pair again
meets the cache at every turn and pays nothing.
"""

from __future__ import annotations

from typing import Any

from playlisteval.errors import ModelError
from playlisteval.eval.agent_tools import TOOLS, Toolbox, listing
from playlisteval.eval.judging import Reply, stop_reason
from playlisteval.eval.verdicts import ERROR, outcome_of, parse_verdict
from playlisteval.models.request import (
    GenerationSettings,
    ModelRequest,
    Part,
    TextPart,
    ToolCallsPart,
    ToolResultPart,
)
from playlisteval.models.runner import Runner
from playlisteval.prompts.citations import strip_citations
from playlisteval.prompts.render import prompts_dir_of, render

TEMPLATE = "g6_agent.j2"
FINAL = ("You have no tool calls left. Answer now from what you have seen: a short analysis, then exactly "
         "[[A]] or [[B]].")
RESULT_CHARS = 400  # of each tool result kept in the judgment's record (the whole text is in the cache)


def ask_agentic(runner: Runner, spec: str, role: str, question: str, answer_a: str, answer_b: str,
                toolbox: Toolbox, generation: GenerationSettings, *, purpose: str, item_id: int,
                run_id: int | None, scope: str) -> tuple[Reply, dict[str, Any]]:
    """Let judge ``spec`` search, look and read until it answers (or its budget is spent). Returns the
    reply (an ``error`` reply when a call failed: never a verdict) and the judgment's evidence record."""
    cfg = runner.settings.eval
    prompt, digest = render(TEMPLATE, prompts_dir_of(runner.settings), question=question,
                            videos=listing(toolbox.videos), answer_a=strip_citations(answer_a),
                            answer_b=strip_citations(answer_b), max_steps=cfg.agent_max_steps)
    parts: list[Part] = [TextPart(text=prompt)]
    trace: list[dict[str, Any]] = []
    chunks: dict[int, None] = {}
    frames: list[list[float]] = []
    calls: list[int] = []
    tokens = 0
    retriever = toolbox.retriever.embedder.name if toolbox.retriever is not None else None
    record: dict[str, Any] = {
        "mode": "agentic", "scope": scope, "retriever": retriever, "corpus_videos": len(toolbox.videos),
        "corpus_seconds": round(sum(v.seconds for v in toolbox.videos), 3), "chunks": [], "frames": [],
        "scores": {}}

    def finish(stopped: str) -> dict[str, Any]:
        record.update(chunks=list(chunks), frames=frames, agent={
            "steps": len(calls), "tokens": tokens, "calls": calls, "stopped": stopped, "tool_calls": trace})
        return record

    def tokens_before_last(step: int) -> bool:
        return step < cfg.agent_max_steps - 1  # the last turn came early: the tokens ran out first

    for step in range(cfg.agent_max_steps):
        last = step == cfg.agent_max_steps - 1 or tokens >= cfg.agent_max_tokens
        request = ModelRequest(
            role=role, parts=[*parts, TextPart(text=FINAL)] if last else list(parts), settings=generation,
            tools=TOOLS, tool_choice="none" if last else "auto", template=TEMPLATE, template_hash=digest,
            item_id=item_id, purpose=purpose, run_id=run_id)
        try:
            response = runner.call(request, model=spec)
        except ModelError as exc:
            reply = Reply(None, ERROR, "", 0, error=f"{type(exc).__name__}: {exc}", stop=stop_reason(exc))
            return reply, finish("error")
        calls.append(response.call_id or 0)
        u = response.usage
        tokens += u.input_tokens + u.output_tokens + u.thinking_tokens
        if not response.tool_calls or last:
            # "answered": it stopped calling tools; else the budget made it answer (the forced last turn)
            stopped = "answered" if not last else "token budget" if tokens_before_last(step) else "step budget"
            verdict = parse_verdict(response.text)
            reply = Reply(verdict, outcome_of(verdict, response.finish_reason), response.text,
                          response.call_id or 0)
            return reply, finish(stopped)
        parts.append(ToolCallsPart(text=response.text, calls=response.tool_calls))
        for call in response.tool_calls:
            result = toolbox.run(call)
            parts.append(ToolResultPart(call_id=call.id, name=call.name, content=result.text))
            parts.extend(result.images)
            chunks.update(dict.fromkeys(result.chunks))
            frames.extend([vid, t] for vid, t in result.frames)
            trace.append({"step": step + 1, "call_id": response.call_id or 0, "tool": call.name,
                          "arguments": call.arguments, "error": result.error, "chunks": result.chunks,
                          "frames": len(result.frames), "result": result.text[:RESULT_CHARS]})
    raise AssertionError("unreachable: the last step always answers")  # pragma: no cover
