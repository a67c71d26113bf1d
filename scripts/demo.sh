#!/usr/bin/env bash
# The main job, offline, end to end: synthetic playlists → index → build → status.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pe="$here/.venv/bin/playlisteval"
demo="$here/demo"

rm -rf "$demo"
"$pe" init "$demo"
cd "$demo"
# short videos need short segments: the paper's 10–30-minute segments would not fit (SPEC 0)
export PLAYLISTEVAL_INDEX__SEGMENT_MIN_S=60
export PLAYLISTEVAL_INDEX__SEGMENT_MAX_S=90
"$pe" synth videos --domains 2 --playlists 1 --videos 3 --minutes 3
for domain in videos/*/; do
  "$pe" add "$(basename "$domain")" "$domain"*/
done
"$pe" index
"$pe" build
"$pe" status
echo
echo "demo project: $demo  (try: cd demo && ../.venv/bin/playlisteval status)"
