#!/usr/bin/env bash
# Install Debian's chromium, the headless browser of the leaderboard page test (tests/test_leaderboard.py).
# Idempotent: does nothing when chromium is already on PATH. Needs root and apt-get; otherwise it says so and
# exits 0 (the browser test is then skipped).
set -euo pipefail

for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then
        echo "chromium already installed: $("$b" --version 2>/dev/null || echo "$b")"
        exit 0
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "install-browser: not root; skipped (as root: apt-get install chromium). The browser test will be skipped."
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: apt-get not found; install chromium with your package manager" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when chromium is not known yet (keeps re-runs fast and offline-friendly).
if ! apt-cache show chromium >/dev/null 2>&1; then
    apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "chromium installed: $(chromium --version 2>/dev/null || echo chromium)"
