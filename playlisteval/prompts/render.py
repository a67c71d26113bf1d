"""Render a role's Jinja2 template (strict undefined) and hash it, so every output records its prompt.

Templates are looked up first in the project's own folder (``[build] prompts_dir``), then in the
package, so a user can replace any single template by dropping a file of the same name. Templates
get one filter of ours, ``strip_citations``. Rendered text is sent to models, not to a browser:
no HTML autoescaping.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, StrictUndefined, Template

from playlisteval.prompts.citations import strip_citations

if TYPE_CHECKING:
    from playlisteval.config import Settings

_DIGEST = "_playlisteval_digest"  # set on each compiled template: the sha256 of the very source it came from


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


class _HashingLoader(ChoiceLoader):
    """The user's folder, then the package; each template, when (re)compiled, carries the digest of the
    source it was compiled from. Jinja compiles a template once per process and again whenever its file
    changes (``auto_reload``: its mtime is checked at every ``get_template``), so the text rendered and the
    digest recorded always come from one and the same source, never read or hashed again per render."""

    def load(self, environment: Environment, name: str, globals: Any = None) -> Template:
        source, filename, uptodate = self.get_source(environment, name)
        code = environment.compile(source, name, filename)
        template = environment.template_class.from_code(environment, code, globals or {}, uptodate)
        setattr(template, _DIGEST, _digest(source))
        return template


@lru_cache(maxsize=8)
def _env(user_dir: str | None) -> Environment:
    loaders: list[Any] = []
    if user_dir:
        loaders.append(FileSystemLoader(user_dir))
    loaders.append(PackageLoader("playlisteval", "prompts"))
    env = Environment(loader=_HashingLoader(loaders), undefined=StrictUndefined, keep_trailing_newline=True,
                      autoescape=False, trim_blocks=True, lstrip_blocks=True)
    env.filters["strip_citations"] = strip_citations  # SPEC G4: judges see answers without citations
    return env


def template_source(name: str, user_dir: str | Path | None = None) -> str:
    env = _env(str(user_dir) if user_dir else None)
    assert env.loader is not None
    source, _, _ = env.loader.get_source(env, name)
    return source


def render(name: str, user_dir: str | Path | None = None, **context: Any) -> tuple[str, str]:
    """(rendered text, sha256 of the template source) for template ``name`` (e.g. "b_generate.j2")."""
    env = _env(str(user_dir) if user_dir else None)
    template = env.get_template(name)
    return template.render(**context), str(getattr(template, _DIGEST))


def prompts_dir_of(settings: Settings) -> str | None:
    """The project's folder of template overrides (``[build] prompts_dir``, relative to the project), or None."""
    folder = settings.build.prompts_dir
    return str((settings.root / folder).resolve()) if folder else None
