#!/bin/bash
# The mini benchmark on one Docker daemon and on Docker Swarm, side by side, on a cluster of
# its own: two private dockerds in two network namespaces joined by a veth pair
# (10.213.251.0/30), a registry (Debian's docker-registry) in the manager's namespace. The
# machine's own daemon only lends the base images (docker save); it is never put in swarm mode.
#
#   sudo scripts/swarm_bench.sh [SWE_EVAL_BINARY]     (default target/debug/swe-eval)
#
# Runs, in one results folder (all -j 2, --cache-level instance, after one warm-up run that
# builds the mini images):
#   docker1   --engine docker on the manager's daemon
#   swarm1    --engine swarm, the manager alone (a swarm of one node)
#   swarm2    --engine swarm --registry, manager and worker (the worker pulls from the registry)
# and prints, per run: wall time, predictions per minute, the medians of the jobs' setup
# (submit to start), run and teardown, the jobs per node (`host (node id)`: both daemons
# share the machine's host name), then whether every verdict
# (category, strict category, error reason) is the same as docker1's. Everything is torn down
# on exit, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/debug/swe-eval}")
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, private dockerds)" >&2; exit 2; }
for p in dockerd docker ip nsenter jq docker-registry; do
    command -v $p >/dev/null || { echo "missing $p" >&2; exit 2; }
done

W=$(mktemp -d /tmp/swe-eval-swarm-bench.XXXXXX)
NM=sebm$$ NW=sebw$$ PORT=5000
IPM=10.213.251.1 IPW=10.213.251.2 REG=10.213.251.1:$PORT
declare -A DPID

cleanup() {
    set +e
    for n in w m; do docker -H unix://$W/$n/d.sock swarm leave --force >/dev/null 2>&1; done
    for n in w m; do [ -n "${DPID[$n]:-}" ] && kill -TERM "${DPID[$n]}" 2>/dev/null; done
    [ -n "${RPID:-}" ] && kill -TERM "$RPID" 2>/dev/null
    sleep 5
    # Containerd, shims and container processes of the private daemons.
    for p in $(grep -l "$W/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
        kill -KILL "$p" 2>/dev/null
    done
    grep " $W/" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l
    ip netns del $NM 2>/dev/null; ip netns del $NW 2>/dev/null
    for c in /sys/fs/cgroup/*/sebench$$; do
        [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    rm -rf "$W"
}
trap cleanup EXIT

ip netns add $NM
ip netns add $NW
ip link add sebm$$ netns $NM type veth peer name sebw$$ netns $NW
ip -n $NM addr add $IPM/30 dev sebm$$
ip -n $NW addr add $IPW/30 dev sebw$$
for ns in $NM $NW; do ip -n $ns link set lo up; done
ip -n $NM link set sebm$$ up
ip -n $NW link set sebw$$ up

daemon() { # name namespace
    mkdir -p $W/$1
    nsenter --net=/var/run/netns/$2 dockerd --data-root $W/$1/data --exec-root $W/$1/exec \
        --pidfile $W/$1/dockerd.pid -H unix://$W/$1/d.sock --iptables=false --ip-masq=false \
        --insecure-registry $REG --cgroup-parent /sebench$$/$1 >$W/$1/dockerd.log 2>&1 &
    DPID[$1]=$!
    for _ in $(seq 60); do docker -H unix://$W/$1/d.sock version >/dev/null 2>&1 && return; sleep 1; done
    echo "daemon $1 did not start; $W/$1/dockerd.log:" >&2; tail $W/$1/dockerd.log >&2; exit 1
}
daemon m $NM
daemon w $NW
M="docker -H unix://$W/m/d.sock"

cat >$W/registry.yml <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $W/registry
http:
  addr: $IPM:$PORT
EOF
nsenter --net=/var/run/netns/$NM docker-registry serve $W/registry.yml >$W/registry.log 2>&1 &
RPID=$!

echo "loading the base images into the manager's daemon"
bases=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^swe-eval/base\.' || true)
[ -n "$bases" ] || { echo "no swe-eval/base.* image on the machine's daemon: run the mini benchmark once" >&2; exit 2; }
docker save $bases | $M load -q

$M swarm init --advertise-addr $IPM >/dev/null

cd $W
run() { # run-id engine-args...
    local id=$1; shift
    echo "== $id: swe-eval run $*" >&2
    DOCKER_HOST=unix://$W/m/d.sock "$BIN" run -j 2 --cache-level instance --run-id "$id" "$@" \
        >$W/$id.out 2>$W/$id.err || { cat $W/$id.out $W/$id.err >&2; exit 1; }
}
figures() { # run-id
    local id=$1 wall
    wall=$(grep -o "^run $id: .* containers run, [0-9.]* s" $W/$id.out | awk '{print $(NF-1)}')
    find results/logs/run_evaluation/$id -name run_instance.log -exec grep -h '^timings: setup ' {} + |
        awk -v id=$id -v wall=$wall '{ gsub(/[s;]/, "", $3); gsub(/[s;]/, "", $5); gsub(/[s;]/, "", $7);
               s[NR]=$3; r[NR]=$5; t[NR]=$7; ss+=$3 }
             function med(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i];
                 for (j = i - 1; j > 0 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x } return a[int(n/2)+1] }
             END { printf "%s: wall %.1f s, %.1f predictions/min, %d jobs, median setup %.2f s, run %.2f s, teardown %.3f s, setup sum %.1f s\n",
                   id, wall, 22 * 60 / wall, NR, med(s, NR), med(r, NR), med(t, NR), ss }'
    find results/logs/run_evaluation/$id -name run_instance.log -exec grep -h '^node ' {} + |
        sed 's/^node //' | sort | uniq -c | sed "s/^/  $id jobs on /" || true
    grep -h "mini benchmark:" $W/$id.out | sed "s/^/  $id /"
}
verdicts() { # run-id
    find results/logs/run_evaluation/$1 -name verdict.json | sort | while read -r f; do
        echo "$(basename "$(dirname "$f")") $(jq -c '[.category, .strict_category, .error_reason]' "$f")"
    done
}

run warm --engine docker
run docker1 --engine docker
run swarm1 --engine swarm
token=$($M swarm join-token -q worker)
docker -H unix://$W/w/d.sock swarm join --token "$token" --advertise-addr $IPW $IPM:2377 >/dev/null
for _ in $(seq 60); do
    [ "$($M node ls --format '{{.Status}}' | grep -c Ready)" = 2 ] && break; sleep 1
done
run swarm2 --engine swarm --registry $REG

echo
for id in docker1 swarm1 swarm2; do figures $id; done
verdicts docker1 >$W/v.docker1
for id in swarm1 swarm2; do
    verdicts $id >$W/v.$id
    if diff -q $W/v.docker1 $W/v.$id >/dev/null; then
        echo "verdicts $id = docker1: $(wc -l <$W/v.$id) of $(wc -l <$W/v.docker1) identical"
    else
        echo "verdicts $id differ from docker1:"; diff $W/v.docker1 $W/v.$id || true
    fi
done
