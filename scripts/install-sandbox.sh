#!/usr/bin/env bash
# Install Debian's bubblewrap (`bwrap`), the preferred isolation layer of phr.eval.sandbox.
# Idempotent: does nothing when bwrap is already on PATH. Needs root (or sudo) and apt-get.
# Without bubblewrap the sandbox still works (unshare or rlimits-only fallback, see docs/sandbox.md).
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap already installed: $(bwrap --version 2>/dev/null || echo bwrap)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-sandbox: apt-get not found; install bubblewrap with your package manager" >&2
    exit 1
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
        echo "install-sandbox: needs root (or sudo) to install bubblewrap" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when bubblewrap is not known yet (keeps re-runs fast and offline-friendly).
if ! apt-cache show bubblewrap >/dev/null 2>&1; then
    ${SUDO[@]+"${SUDO[@]}"} apt-get update -qq
fi
${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
echo "bubblewrap installed: $(bwrap --version 2>/dev/null || echo bwrap)"
