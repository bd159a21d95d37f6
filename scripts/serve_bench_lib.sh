# Sourced by the scripts/bench_serve_*.sh scripts (not run on its own): what they share.
#
#   bench_scratch PREFIX   checks $BIN, makes the scratch folder `scratch` (/tmp/PREFIX.XXXXXX)
#                          and, at exit, stops the server whose pid is in `server` (if any) and
#                          removes the folder (kept when KEEP=1)
#   serve_start NAME ARGS  starts `$BIN serve -o $scratch/NAME --listen 127.0.0.1:0 ARGS` on a
#                          fresh state and waits for its address; sets `server` and `addr`
#   serve_stop             stops it (SIGTERM) and waits for it
#   now                    the time in seconds, for differences
#   median X...            the median of the numbers given
#
# Expects BIN and KEEP set.

bench_scratch() {
  [ -x "$BIN" ] || { echo "no $BIN: cargo build --release first" >&2; exit 1; }
  scratch="$(mktemp -d "/tmp/$1.XXXXXX")"
  server=""
  trap bench_cleanup EXIT
}

bench_cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server"; wait "$server" || true
  fi
  if [ "$KEEP" = 1 ]; then echo "kept $scratch" >&2; else rm -rf "$scratch"; fi
}

serve_start() {
  local name=$1; shift
  "$BIN" serve -o "$scratch/$name" --listen 127.0.0.1:0 "$@" >"$scratch/$name.out" 2>"$scratch/$name.log" &
  server=$!
  addr=""
  for _ in $(seq 1 300); do
    addr=$(grep -o 'http://[0-9.:]*' "$scratch/$name.out" 2>/dev/null | head -1 | sed 's|http://||' || true)
    [ -n "$addr" ] && break
    sleep 0.2
  done
  [ -n "$addr" ] || { echo "the server did not start: $scratch/$name.log" >&2; KEEP=1; exit 1; }
}

serve_stop() { kill -TERM "$server"; wait "$server" || true; server=""; }

now() { date +%s.%N; }

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
