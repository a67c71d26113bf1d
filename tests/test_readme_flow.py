"""Issue 14, done when: the README's "Using it" commands, pasted one by one into a shell after `make demo`,
all succeed. This runs them from README.md itself, line by line in one bash process (so `cd` and `export`
carry over), in a fresh folder, so the README cannot drift from the tool; then checks every command's
`--json` against the README's table of top-level keys."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
REFERENCE = REPO / "docs" / "reference.md"  # the --json keys table moved there (issue 23)
VENV = REPO / ".venv"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (shutil.which("ffmpeg") and shutil.which("espeak-ng")), reason="synth renders videos"),
    pytest.mark.skipif(not (VENV / "bin" / "activate").is_file(), reason="make install makes the .venv first"),
]

#: each `--json` command run after the README's flow, by the README table's name for it
JSON_RUNS = {
    "add": "add --manifest videos/manifest.csv --json",
    "remove": "remove --domain History --dry-run --json",
    "index": "index --json",
    "search": 'search "fossils in limestone" --k 2 --json',
    "cost estimate": "cost estimate --json",
    "build": "build --json",
    "resume": "resume --json",
    "status": "status --json",
    "funnel": "funnel --json",
    "show": "show 1 --json",
    "select": "select --json",
    "export": "export bench_json/ --json",
    "eval judge": "eval judge --judge sim/judge --json",
    "eval retrieve": "eval retrieve --json",
    "leaderboard": "leaderboard --json",
    "report": "report report_json.html --json",
}


def using_it_block(text: str) -> list[str]:
    """The command lines of the first ```sh block of the "Using it" section."""
    section = text.split("## Using it", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def json_table(text: str) -> dict[str, list[str]]:
    """README "Output as JSON": command → its documented top-level keys ([] for a list)."""
    section = text.split("**Output as JSON.**", 1)[1].split("\n## ", 1)[0]
    table: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = re.match(r"^\| (`[^|]+`) \| ([^|]+) \|$", line)
        if not match:
            continue
        keys = [] if match.group(2).startswith("a list") else [k.strip() for k in match.group(2).split(",")]
        for command in re.findall(r"`([^`]+)`", match.group(1)):
            table[command] = keys
    return table


def _script(lines: list[str], out: Path) -> str:
    steps = [f"source {shlex.quote(str(VENV / 'bin' / 'activate'))}"]
    for number, line in enumerate(lines, 1):
        if line.startswith("make install"):
            # the test stands in for make: its .venv is the one `make install` made in the repository
            line = f"source {shlex.quote(str(VENV / 'bin' / 'activate'))}"
        steps.append(f"echo {shlex.quote(f'$ {line}')}")
        steps.append(line)
        steps.append(f'rc=$?; if [ "$rc" -ne 0 ]; then echo "README line {number} exited $rc: "'
                     f'{shlex.quote(line)} >&2; exit 90; fi')
    for name, command in JSON_RUNS.items():
        target = shlex.quote(str(out / f"{name.replace(' ', '_')}.json"))
        steps.append(f"playlisteval {command} > {target} 2>/dev/null; echo $? > {target}.rc")
    return "\n".join(steps) + "\n"


def test_the_readme_flow_runs_as_written(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    lines = using_it_block(text)
    assert lines[0].startswith("make install") and any(line.startswith("playlisteval synth") for line in lines)
    work, out = tmp_path / "fresh", tmp_path / "json"
    work.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLAYLISTEVAL_", "VIRTUAL_ENV"))}
    env.update(COLUMNS="200", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PATH=":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p))
    (tmp_path / "flow.sh").write_text(_script(lines, out))
    result = subprocess.run(["bash", str(tmp_path / "flow.sh")], cwd=work, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    assert (work / "myproject" / "report.html").is_file() and (work / "myproject" / "bench_out" / "README.md").is_file()
    assert "Traceback" not in result.stdout + result.stderr

    documented = json_table(REFERENCE.read_text(encoding="utf-8"))
    assert set(documented) >= {*JSON_RUNS, "resume"}
    for name in JSON_RUNS:
        path = out / f"{name.replace(' ', '_')}.json"
        rc = int((out / f"{path.name}.rc").read_text())
        assert rc == 0, f"playlisteval {JSON_RUNS[name]} exited {rc}"
        body = path.read_text()
        data = json.loads(body.splitlines()[0]) if name == "eval judge" else json.loads(body)
        if not documented[name]:
            assert isinstance(data, list) and all({"path", "start", "end", "score"} <= set(d) for d in data)
            continue
        missing = set(documented[name]) - set(data)
        assert not missing, f"{name} --json lacks {sorted(missing)} (README says it has them)"
