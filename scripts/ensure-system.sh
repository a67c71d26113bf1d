#!/usr/bin/env bash
# Install the Debian packages playlisteval needs, when they are missing.
# As root this runs apt-get; otherwise it names the packages to install and fails.
set -euo pipefail

declare -A need=(
  [ffmpeg]=ffmpeg [ffprobe]=ffmpeg [espeak-ng]=espeak-ng [redis-server]=redis-server
  [fc-list]=fontconfig
  [chromium]=chromium  # the annotation app's browser tests (Playwright drives Debian's build)
)
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" -eq 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "playlisteval needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
