#!/usr/bin/env bash
# What a test run costs: wall and CPU time, app boots and processes started. Usage:
#   bash scripts/test-census.sh [npm test | npm run test:quick | any command]   (default: npm test)
# Processes are counted by strace (execve, through a seccomp filter, so the run is barely slowed);
# boots by the test harness, one line per app it starts (TEST_CENSUS). CPU is this command's and its
# children's (user + system), not PostgreSQL's or Redis's.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- npm test
out="$(mktemp -d)"
export TEST_CENSUS="$out/boots"
: > "$TEST_CENSUS"
status=0
/usr/bin/time -f '%e %U %S' -o "$out/time" strace -f --seccomp-bpf -qq -e trace=execve -e signal=none -o "$out/execs" "$@" || status=$?
read -r wall user sys < "$out/time"
printf '\n== census of: %s (exit %s)\n' "$*" "$status"
printf 'wall %.0f s, CPU %.0f s (user %.0f + system %.0f)\n' "$wall" "$(awk "BEGIN { print $user + $sys }")" "$user" "$sys"
printf 'app boots: %s (%s)\n' "$(wc -l < "$TEST_CENSUS")" "$(sort "$TEST_CENSUS" | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')"
# A process started = a pid whose execve succeeded (a call may be split into "unfinished" and "resumed" lines).
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
  const tried = new Map(), ran = new Map();
  for (const line of lines) {
    const [, pid, rest] = /^(\d+) +(.*)$/.exec(line) ?? [];
    if (!pid) continue;
    const file = /^execve\("([^"]+)"/.exec(rest)?.[1];
    if (file) tried.set(pid, file);
    if (/= 0$/.test(rest) && tried.has(pid)) ran.set(pid, tried.get(pid).split("/").pop());
  }
  const byProgram = new Map();
  for (const program of ran.values()) byProgram.set(program, (byProgram.get(program) ?? 0) + 1);
  const top = [...byProgram].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([p, n]) => `${p} ${n}`).join(", ");
  console.log(`processes started: ${ran.size} (${top})`);
' "$out/execs"
exit "$status"
