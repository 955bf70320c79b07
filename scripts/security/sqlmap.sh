#!/usr/bin/env bash
# An injection check outside the test suite: Debian's sqlmap, in batch mode at level 2 and risk 1,
# against the service on 127.0.0.1 only, over every query parameter, JSON body field and path
# parameter of the live OpenAPI document, with valid sessions. Prints a summary; exits 1 when
# sqlmap reports an injectable parameter, 2 when sqlmap is missing.
#
#   scripts/security/sqlmap.sh            # every injection point
#   SQLMAP_ONLY=task- scripts/security/sqlmap.sh   # only operation ids containing "task-"
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v sqlmap >/dev/null; then
  echo "sqlmap is not installed: apt-get install -y sqlmap" >&2
  exit 2
fi

# Node 24 (type stripping): the project's own, as npm scripts use it.
NODE=${NODE:-node_modules/.bin/node}
[ -x "$NODE" ] || NODE=node

work=$(mktemp -d /tmp/tenantry-sqlmap-XXXXXX)
chmod 755 "$work"
"$NODE" scripts/security/sqlmap-target.ts "$work" >"$work/target.log" 2>&1 &
target=$!
cleanup() {
  kill "$target" 2>/dev/null || true
  wait "$target" 2>/dev/null || true
  # The logs stay; the scratch database and stored files go.
  rm -rf "$work/pg" "$work/files"
}
trap cleanup EXIT

for _ in $(seq 1 240); do
  [ -f "$work/ready" ] && break
  if ! kill -0 "$target" 2>/dev/null; then
    echo "the target did not start:" >&2
    cat "$work/target.log" >&2
    exit 3
  fi
  sleep 0.5
done
[ -f "$work/ready" ] || { echo "the target did not get ready in 120 s" >&2; exit 3; }
echo "target: $(cat "$work/ready")"
echo "sqlmap $(sqlmap --version 2>/dev/null | head -1), level 2, risk 1, batch, 127.0.0.1 only; output under $work/out"

total=0
injectable=0
errors=0
: >"$work/summary.txt"
while IFS= read -r line; do
  op=$("$NODE" -e 'console.log(JSON.parse(process.argv[1]).operationId)' "$line")
  case "$op" in *"${SQLMAP_ONLY:-}"*) ;; *) continue ;; esac
  mapfile -t args < <("$NODE" -e '
    const t = JSON.parse(process.argv[1]);
    const out = ["-u", t.url, "--method", t.method, "-H", `Host: ${t.host}`, "--batch", "--level", "2", "--risk", "1",
      "--dbms", "PostgreSQL", "--flush-session", "--disable-coloring", "--ignore-code", "401,403,404,409,413,422,429",
      "--time-sec", "2", "--output-dir", process.argv[2]];
    if (t.cookie) out.push("--cookie", t.cookie);
    if (t.data !== undefined) out.push("--data", t.data, "-H", "Content-Type: application/json");
    // A path parameter is marked with * in the URL; every other point is named.
    if (!t.param.startsWith("{")) out.push("-p", t.param);
    // The public sign-in routes count failures per client address: a fresh X-Forwarded-For per
    // request (the target trusts it from loopback) keeps sqlmap from testing against 429s.
    if (/^auth-(session-login|password-)/.test(t.operationId)) out.push("--tamper", "xforwardedfor");
    for (const a of out) console.log(a);
  ' "$line" "$work/out")
  param=$("$NODE" -e 'console.log(JSON.parse(process.argv[1]).param)' "$line")
  total=$((total + 1))
  log="$work/$total.log"
  if ! sqlmap "${args[@]}" >"$log" 2>&1; then
    errors=$((errors + 1))
  fi
  if grep -qiE "is vulnerable|sqlmap identified the following injection point|appears to be injectable" "$log"; then
    injectable=$((injectable + 1))
    verdict="INJECTABLE"
  elif grep -qiE "does not seem to be injectable|all tested parameters do not appear to be injectable" "$log"; then
    verdict="not injectable"
  else
    verdict="inconclusive ($(grep -E '\[(CRITICAL|ERROR)\]' "$log" | tail -1 | cut -c1-120))"
  fi
  printf '%-36s %-16s %s\n' "$op" "$param" "$verdict" | tee -a "$work/summary.txt"
done <"$work/targets.jsonl"

echo
echo "summary: $total injection points tested, $injectable injectable, $(grep -c inconclusive "$work/summary.txt" || true) inconclusive, sqlmap exited non-zero $errors times"
echo "logs: $work"
[ "$injectable" -eq 0 ]
