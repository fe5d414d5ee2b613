#!/usr/bin/env bash
# bench/services.sh: does isobench add anything to the load generators'
# numbers? In one run, interleaved round by round, for each platform:
#
#   - isobench's own run of `http:server=nginx,tool=wrk` and
#     `redis` (redis-benchmark -P 16), one repetition per round;
#   - the reference: the very same server (isobench's in-guest _service
#     half, so the same binary, configuration and image), started by hand
#     (natively, or with `docker run` of the same isobench/debian image
#     with its port published on 127.0.0.1), and wrk / redis-benchmark run
#     directly against it with the same arguments.
#
# It prints the medians over the rounds and the isobench/reference ratios
# (they should be ~1: isobench only starts the server and reads the tool's
# report).
#
#   bench/services.sh [ROUNDS]                 (default 3; as root)
#   PLATFORMS="native docker" DURATION=5 USERS=50 CONNECTIONS=4 bench/services.sh
#
# Only loopback (and the docker bridge behind a published port) is used.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
dur=${DURATION:-5}
users=${USERS:-50}
conns=${CONNECTIONS:-4}
requests=${REQUESTS:-200000}
platforms=${PLATFORMS:-native docker}

need=()
for t in wrk redis-benchmark python3 nginx redis-server; do command -v "$t" >/dev/null || need+=("$t"); done
if ((${#need[@]})); then
  DEBIAN_FRONTEND=noninteractive apt-get install -y wrk redis-tools nginx redis-server >/dev/null
fi

work=$(mktemp -d /tmp/isobench-services.XXXXXX)
label="isobench.services=$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ids=$(docker ps -aq --filter "label=$label" 2>/dev/null || true)
  [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

make -s build
bin=$(pwd)/bin/isobench
$bin workloads | grep '^http ' >/dev/null || { echo "$bin has no http workload" >&2; exit 1; }
db=$work/services.db
threads=$(( $(nproc) < users ? $(nproc) : users ))
wrk_args=(-t "$threads" -c "$users" -d "${dur}s" --latency)
redis_args=(-c "$conns" -n "$requests" -P 16 -r 100000 -t get,set --csv)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# serve PLATFORM KIND PORT: starts the in-guest server half and waits for
# its ready event; sets srv_pid, srv_in (its stdin fifo) and srv_addr.
serve() {
  local plat=$1 kind=$2 port=$3 fifo=$work/in-$RANDOM out=$work/out-$RANDOM
  mkfifo "$fifo"
  local params="kind=$kind,port=$port,size=4k"
  if [ "$plat" = native ]; then
    mkdir -p "$work/scratch-$port"
    ISOBENCH_SCRATCH=$work/scratch-$port $bin agent run _service "$params,bind=127.0.0.1" <"$fifo" >"$out" 2>&1 &
    srv_addr=127.0.0.1:$port
  else
    local tag
    tag=$(docker images isobench/debian --format '{{.Tag}}' | head -1)
    docker run -i --rm --label "$label" --name "isob-svc-$$-$port" -p "127.0.0.1::$port" "isobench/debian:$tag" \
      /usr/local/bin/isobench agent run _service "$params,bind=0.0.0.0" <"$fifo" >"$out" 2>&1 &
  fi
  srv_pid=$!
  pids+=("$srv_pid")
  exec {srv_in}>"$fifo"
  for _ in $(seq 600); do grep -q '"ready"' "$out" && break; sleep 0.1; done
  grep -q '"ready"' "$out" || { echo "server $kind on $plat did not get ready:"; cat "$out"; exit 1; } >&2
  echo go >&$srv_in
  if [ "$plat" != native ]; then
    srv_addr=$(docker port "isob-svc-$$-$port" "$port/tcp" | head -1)
  fi
}

stop() { exec {srv_in}>&-; wait "$srv_pid" || true; }

for r in $(seq "$rounds"); do
  for plat in $platforms; do
    echo "round $r/$rounds: $plat" >&2
    # isobench's own run (docker: the server's port published, as a user reaches it)
    popt=$plat; [ "$plat" = docker ] && popt="docker:network=nat"
    $bin run --platform "$popt" --image debian --reps 1 --db "$db" \
      --workload "http:server=nginx,tool=wrk,users=$users,duration=${dur}s" \
      --workload "redis:connections=$conns,requests=$requests" >/dev/null
    # the reference, against the same server started by hand
    port=$(free_port)
    serve "$plat" nginx "$port"
    wrk "${wrk_args[@]}" "http://$srv_addr/index.html" >"$work/wrk-$plat-$r.txt"
    stop
    port=$(free_port)
    serve "$plat" redis "$port"
    redis-benchmark -h "${srv_addr%:*}" -p "${srv_addr##*:}" "${redis_args[@]}" >"$work/redis-$plat-$r.csv"
    stop
  done
done

$bin results --db "$db" --format jsonl >"$work/samples.jsonl"
WORK=$work PLATFORMS="$platforms" ROUNDS=$rounds python3 - <<'EOF'
import csv, json, os, re, statistics
work, plats, rounds = os.environ["WORK"], os.environ["PLATFORMS"].split(), int(os.environ["ROUNDS"])
samples = [json.loads(l) for l in open(f"{work}/samples.jsonl")]
def iso(plat, workload, metric):
    v = [s["value"] for s in samples if s["platform"] == plat and s["workload"] == workload
         and s["metric"] == metric and s["instance"] == 0 and not s.get("warmup")]
    return statistics.median(v) if v else None
def ref_wrk(plat):
    v = []
    for r in range(1, rounds + 1):
        m = re.search(r"Requests/sec:\s+([\d.]+)", open(f"{work}/wrk-{plat}-{r}.txt").read())
        v.append(float(m.group(1)))
    return statistics.median(v)
def ref_redis(plat, op):
    v = []
    for r in range(1, rounds + 1):
        for row in csv.reader(open(f"{work}/redis-{plat}-{r}.csv")):
            if row and row[0] == op:
                v.append(float(row[1]))
    return statistics.median(v)
print(f"medians of {rounds} round(s); ratio = isobench / direct run of the tool")
print(f"{'platform':10} {'metric':28} {'isobench':>12} {'direct':>12} {'ratio':>7}")
for p in plats:
    rows = [("http requests_per_sec", iso(p, "http", "requests_per_sec"), ref_wrk(p)),
            ("redis get_ops_per_sec", iso(p, "redis", "get_ops_per_sec"), ref_redis(p, "GET")),
            ("redis set_ops_per_sec", iso(p, "redis", "set_ops_per_sec"), ref_redis(p, "SET"))]
    for name, a, b in rows:
        ratio = f"{a / b:.3f}" if a and b else "-"
        print(f"{p:10} {name:28} {a or 0:12.1f} {b or 0:12.1f} {ratio:>7}")
EOF
