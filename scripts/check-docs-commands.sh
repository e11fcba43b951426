#!/usr/bin/env bash
# Run the shell commands of README.md and docs/*.md verbatim, as a new user would after the quick start.
#
#   scripts/check-docs-commands.sh            a fresh `git clone` of this checkout's HEAD in a temporary folder; the
#                                             README's quick start first (scripts/setup.sh: a few minutes), then
#                                             every other command, each in the clone's root with .venv activated
#   scripts/check-docs-commands.sh DIR        the same in DIR, a clone where the quick start already ran
#   scripts/check-docs-commands.sh DIR FILE.. only the commands of these files (relative to the checkout)
#   scripts/check-docs-commands.sh --list     print what would run and what is skipped (and why); run nothing
#
# Commands are the lines of fenced ```bash blocks (a trailing backslash joins lines; comment lines dropped), in
# README.md first, then docs/ in reading order, all in the one clone (a later command may use what an earlier one
# built, as the docs assume); a command that already ran (the same text, comments aside) runs once. A command is
# skipped when it matches a rule of SKIPS below, each with its reason (a GPU, the network or a key, a placeholder
# to fill in). Each command's output goes to LOGDIR/NN.log; a summary line per command; exit 1 if any failed.
# PHR_HOME defaults to a fresh folder next to the clone (a new user's empty cache; the offline model is converted
# once there).
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
LIST=0
[ "${1:-}" = "--list" ] && { LIST=1; shift; }

# regex (extended, matched against the whole command) | reason
SKIPS=(
  'scripts/setup\.sh .*pytest( -n auto)?$|the whole test suite (about 11 min on 2 cores): run it on its own'
  '^(python3 -m venv|pip install)|"Install by hand": the alternative to the quick start'"'"'s scripts/setup.sh'
  '^sudo |changes the system (root): scripts/setup.sh does it when run as root'
  '(^| )(HF_TOKEN=|hf download)|the Hugging Face Hub: network and a token'
  '(openai|anthropic|google):|a hosted model: network and an API key'
  '(--preset paper|--recipe paper|paper-qwen|zero2\.yaml|ddp\.yaml|vllm|CUDA_VISIBLE_DEVICES)|paper-size models or several GPUs'
  '(ORG/|HUBDIR|<[a-z]|SPEC|TEST_PATH|=PATH|=DIR|\.\.\.|runs/a/)|a placeholder to fill in (names, paths, models)'
  '\[--|a usage line with optional parts, not a command'
  'scored/\*|needs scored submissions in scored/ (docs/submissions.md)'
  'push [^ ]+ --repo [^ ]+( +#.*)?$|a push to the Hugging Face Hub (no --hub HUBDIR): network and a token'
)
# whole blocks that are one walk-through of something skipped above: FILE:FIRST-LAST | reason
SKIP_LINES=(
  'docs/scaling.md:215-221|one shell session around a background protocol server (exported variables, kill %1): tests/test_batch_api.py drives the same batch run'
  'docs/review.md:30-38|the paper build'"'"'s review round: its premises come from the paper recipe (skipped above)'
)
DOCS=(README.md docs/hr1.md docs/training.md docs/evaluation.md docs/expectations.md docs/review.md
      docs/publishing.md docs/leaderboard.md docs/submissions.md docs/harnesses.md docs/analyses.md docs/sandbox.md
      docs/scaling.md)

commands() {  # FILE:LINE<TAB>COMMAND for every command of the bash blocks of the files given
  python3 - "$@" <<'EOF'
import sys
for path in sys.argv[1:]:
    block, joined, start = False, "", 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if line.startswith("```"):
            block = line.strip() == "```bash" and not block
            continue
        if not block:
            continue
        if not joined:
            start = n
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        cmd = " ".join((joined + line).split()) if joined else line.strip()
        joined = ""
        if cmd and not cmd.startswith("#"):
            print(f"{path}:{start}\t{cmd}")
EOF
}

skip_reason() {  # the reason COMMAND (at FILE:LINE) is skipped, or nothing
  local rule file="${2%%:*}" line="${2##*:}" range
  for rule in "${SKIP_LINES[@]}"; do
    range="${rule%%|*}"
    if [ "${range%%:*}" = "$file" ]; then
      range="${range#*:}"
      if [ "$line" -ge "${range%-*}" ] && [ "$line" -le "${range#*-}" ]; then printf '%s' "${rule#*|}"; return; fi
    fi
  done
  for rule in "${SKIPS[@]}"; do
    if printf '%s' "$1" | grep -Eq -- "${rule%|*}"; then printf '%s' "${rule##*|}"; return; fi
  done
}

[ $# -gt 1 ] && DOCS=("${@:2}")
if [ "$LIST" = 1 ]; then
  CLONE="$HERE" QUICK_DONE=0
elif [ -n "${1:-}" ]; then
  CLONE="$(cd "$1" && pwd)" || exit 1
  QUICK_DONE=1
else
  CLONE="$(mktemp -d)/phr-toolkit"
  git clone -q "$HERE" "$CLONE" || exit 1
  QUICK_DONE=0
fi
if [ "$LIST" = 0 ]; then
  LOGDIR="${LOGDIR:-$(dirname "$CLONE")/docs-check-logs}"
  mkdir -p "$LOGDIR"
  export PHR_HOME="${PHR_HOME:-$(dirname "$CLONE")/phr-home}"
  echo "clone: $CLONE (quick start $([ $QUICK_DONE = 1 ] && echo 'already done' || echo 'runs first')); PHR_HOME=$PHR_HOME; logs: $LOGDIR"
fi

cd "$CLONE" || exit 1
failed=0 ran=0 skipped=0 i=0
declare -A seen
while IFS=$'\t' read -r where cmd; do
  i=$((i + 1))
  why="$(skip_reason "$cmd" "$where")"
  key="$(printf '%s' "$cmd" | sed -E 's/[[:space:]]+#[[:space:]].*$//; s#(^| )\.venv/bin/#\1#g')"  # comments, .venv/bin/ aside
  if [ -z "$why" ] && [ -n "${seen[$key]:-}" ]; then why="ran above (${seen[$key]})"; fi
  [ -z "$why" ] && seen[$key]="$where"
  if [ -z "$why" ] && [ "$QUICK_DONE" = 1 ] && [[ "$cmd" == "bash scripts/setup.sh"* ]]; then
    why="the quick start (already done in $CLONE)"
  fi
  if [ -n "$why" ]; then
    skipped=$((skipped + 1))
    printf 'skip     %-24s %s\n         (%s)\n' "$where" "$cmd" "$why"
    continue
  fi
  if [ "$LIST" = 1 ]; then
    printf 'run      %-24s %s\n' "$where" "$cmd"
    continue
  fi
  log="$LOGDIR/$(printf '%02d' "$i").log"
  t0=$(date +%s)
  # verbatim, in the clone's root; after the quick start the environment is active (README: ". .venv/bin/activate")
  if [[ "$cmd" == "bash scripts/setup.sh"* ]]; then
    bash -c "$cmd" </dev/null >"$log" 2>&1
  else
    bash -c ". .venv/bin/activate && $cmd" </dev/null >"$log" 2>&1
  fi
  rc=$?
  ran=$((ran + 1))
  if [ $rc -eq 0 ]; then state=ok; else state="FAIL($rc)"; failed=$((failed + 1)); fi
  printf '%-8s %4ss %-24s %s  [%s]\n' "$state" "$(( $(date +%s) - t0 ))" "$where" "$cmd" "$log"
done < <(commands "${DOCS[@]}")
[ "$LIST" = 1 ] && exit 0
echo "ran $ran, failed $failed, skipped $skipped (reasons above)"
[ $failed -eq 0 ]
