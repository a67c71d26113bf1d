"""Small real media for the index tests: ffmpeg lavfi test patterns, tones, flite and espeak-ng speech, SRT
sidecars."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sqlalchemy.engine import Engine

from playlisteval.config import Settings
from playlisteval.store import open_store


def make_video(path: Path, duration: float, *, audio: str | None = "sine", speech: str = "",
               size: str = "160x120", rate: int = 5) -> Path:
    """A tiny H.264 video of ``duration`` seconds; audio "sine", "speech" (flite) or None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y",
           "-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration={duration}"]
    if audio == "sine":
        cmd += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=16000:duration={duration}"]
    elif audio == "speech":
        cmd += ["-f", "lavfi", "-i", f"flite=text='{speech}':voice=slt"]
    cmd += ["-map", "0:v"]
    if audio:
        cmd += ["-map", "1:a", "-c:a", "aac", "-b:a", "24k", "-af", "apad", "-t", str(duration)]
    cmd += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(cmd, check=True)
    return path


def make_narrated(path: Path, duration: float, lines: list[tuple[float, str]], *, size: str = "160x120",
                  rate: int = 5, video: bool = True, voice: str = "en-us") -> Path:
    """A video whose only sound is espeak-ng saying each (start second, sentence) of ``lines`` in ``voice``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    wavs = []
    for i, (_start, text) in enumerate(lines):
        wav = path.with_name(f".{path.stem}.{i}.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(wav), text], check=True)
        wavs.append(wav)
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    if video:
        cmd += ["-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration={duration}"]
    for wav in wavs:
        cmd += ["-i", str(wav)]
    first = 1 if video else 0
    delays = ";".join(f"[{first + i}:a]adelay={round(start * 1000)}:all=1[s{i}]" for i, (start, _) in enumerate(lines))
    mix = "".join(f"[s{i}]" for i in range(len(lines)))
    graph = f"{delays};{mix}amix=inputs={len(lines)}:normalize=0,apad,aresample=16000[a]"
    cmd += ["-filter_complex", graph, "-map", "[a]", "-c:a", "aac", "-b:a", "48k", "-t", str(duration)]
    if video:
        cmd += ["-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    subprocess.run([*cmd, str(path)], check=True)
    for wav in wavs:
        wav.unlink()
    return path


def srt_time(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def write_srt(path: Path, cues: list[tuple[float, float, str]]) -> Path:
    blocks = [f"{i}\n{srt_time(s)} --> {srt_time(e)}\n{text}\n" for i, (s, e, text) in enumerate(cues, 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(blocks))
    return path


def settings_for(tmp_path: Path, **index: object) -> Settings:
    s = Settings()
    s.root = tmp_path
    s.store.url = "sqlite:///x.db"
    s.index.ocr = "none"  # OCR costs ~0.3 s a frame: tests that read on-screen text ask for it
    for key, value in index.items():
        setattr(s.index, key, value)
    return s


def store(settings: Settings) -> Engine:
    return open_store(settings)


def tiny_qwen_vl(folder: Path) -> Path:
    """A randomly initialised Qwen3-VL backbone a few KB big, with a word-level tokenizer and the image
    processor, saved the way a Qwen3-VL-Embedding checkpoint is laid out: what the VL embedder's real
    loading code reads, built offline."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3VLConfig, Qwen3VLModel
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|image_pad|>", "<|video_pad|>"]
    words = ["system", "user", "assistant", "represent", "the", "input", "retrieve", "video", "segments", "that",
             "show", "and", "say", "what", "question", "asks", "about", "roman", "legions", "marched", "rivers",
             "carry", "sediment", "glaciers", ".", "'", "s"]
    vocab = {t: i for i, t in enumerate([*special, "<unk>", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.add_special_tokens(special)
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|endoftext|>", unk_token="<unk>",
                            eos_token="<|im_end|>").save_pretrained(folder)
    Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2).save_pretrained(folder)
    config = Qwen3VLConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3],
                                         "mrope_interleaved": True}},
        vision_config={"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 16,
                       "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                       "num_position_embeddings": 64, "deepstack_visual_indexes": [0]},
        image_token_id=vocab["<|image_pad|>"], video_token_id=vocab["<|video_pad|>"],
        vision_start_token_id=vocab["<|vision_start|>"], vision_end_token_id=vocab["<|vision_end|>"],
    )
    torch.manual_seed(0)
    Qwen3VLModel(config).save_pretrained(folder)
    return folder
