#!/bin/bash
# A testbed of N hosts on this one machine, for tests and benchmarks that
# must cross a real network stack (docs/cluster.md, "A testbed of hosts").
#
#   tools/cluster/testbed.sh up N     # hosts tandem-h1 .. tandem-hN
#   tools/cluster/testbed.sh down     # every host, the bridge, the daemons
#   tools/cluster/testbed.sh check    # can this machine have one? (exit 0/1, says why)
#   tools/cluster/testbed.sh hosts    # the hosts up, one "NAME ADDRESS" per line
#   tools/cluster/testbed.sh run HOST CMD...   # CMD inside HOST (see testbed_exec.sh)
#
# Each host is a network namespace with its own hostname (a UTS namespace),
# its loopback up and one interface, eth0, a veth whose other end is on a
# bridge. The bridge lives in a namespace of its own, so the machine's own
# firewall rules and interfaces never see the traffic. Addresses come from
# 10.213.0.0/24, a range used only inside these namespaces: host i is
# 10.213.0.(10+i). Nothing is added to the machine's own network namespace.
#
# TANDEM_TESTBED_NAME (default tandem) names the testbed: its hosts are
# NAME-h1.., its bridge's namespace NAME-bridge, its state /run/NAME-testbed
# (the UTS namespaces' mount files and `hosts`, the list `hosts` prints).
# Testbeds of different names can be up at once (their addresses are the
# same, but each is alone on its own bridge). `up`
# first takes down whatever an earlier testbed left, so it is idempotent;
# `down` kills every process still inside a host, so nothing is left behind.
# Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and a kernel with network
# and UTS namespaces, veth and bridge; `check` says which is missing.
set -euo pipefail

NAME=${TANDEM_TESTBED_NAME:-tandem}
[[ "$NAME" =~ ^[a-z][a-z0-9]{0,11}$ ]] || { echo "testbed: TANDEM_TESTBED_NAME must be 1-12 of a-z0-9, starting with a letter" >&2; exit 1; }
STATE=/run/$NAME-testbed
PREFIX=$NAME-h            # host names: tandem-h1, tandem-h2, ...
BRIDGE_NS=$NAME-bridge
SUBNET=10.213.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "testbed: $*" >&2; exit 1; }

netns_of() { echo "$1"; }                   # a host's network namespace has its name
uts_of() { echo "$STATE/uts/$1"; }

check() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, bridge)"
  for tool in ip nsenter unshare mount; do
    command -v $tool >/dev/null || die "needs '$tool' (Debian: iproute2, util-linux, mount)"
  done
  local probe=tandem-tb-probe-$$
  ip netns add $probe 2>/dev/null || die "network namespaces are not permitted here (ip netns add failed)"
  local ok=1 why=""
  if ! ip -n $probe link add tbp0 type veth peer name tbp1 2>/dev/null; then ok=0 why="veth interfaces"; fi
  if [ $ok = 1 ] && ! ip -n $probe link add tbpbr type bridge 2>/dev/null; then ok=0 why="bridges"; fi
  ip netns del $probe
  [ $ok = 1 ] || die "this kernel does not permit $why in a network namespace"
  unshare --uts true 2>/dev/null || die "UTS namespaces are not permitted here (unshare --uts failed)"
}

# The UTS namespaces are kept alive by bind mounts on files under
# $STATE/uts, which must be a private mount (unshare --uts=FILE's rule).
prepare_state() {
  mkdir -p "$STATE/uts"
  if ! mountpoint -q "$STATE/uts"; then
    mount --bind "$STATE/uts" "$STATE/uts"
  fi
  mount --make-private "$STATE/uts"
}

add_host() {  # add_host INDEX
  local name=$PREFIX$1 address=$SUBNET.$((10 + $1))
  local ns; ns=$(netns_of $name)
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n $BRIDGE_NS link add "vb$1" type veth peer name eth0 netns "$ns"
  ip -n $BRIDGE_NS link set "vb$1" master br0 up
  ip -n "$ns" addr add "$address/24" dev eth0
  ip -n "$ns" link set eth0 up
  local uts; uts=$(uts_of $name)
  : >"$uts"
  unshare --uts="$uts" hostname "$name"
  echo "$name $address" >>"$STATE/hosts"
}

up() {
  local n=${1:-}
  [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "usage: testbed.sh up N (1..99 hosts)"
  check
  down >/dev/null
  prepare_state
  : >"$STATE/hosts"
  ip netns add $BRIDGE_NS
  ip -n $BRIDGE_NS link set lo up
  ip -n $BRIDGE_NS link add br0 type bridge
  ip -n $BRIDGE_NS link set br0 up
  for i in $(seq 1 "$n"); do add_host "$i"; done
  echo "testbed: $n hosts up ($(awk '{print $1}' "$STATE/hosts" | paste -sd' '))"
}

kill_inside() {  # kill_inside NETNS: every process in it, SIGTERM then SIGKILL
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  [ -z "$pids" ] && return 0
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 20); do
    pids=$(ip netns pids "$1" 2>/dev/null || true)
    [ -z "$pids" ] && return 0
    sleep 0.1
  done
  kill -KILL $pids 2>/dev/null || true
  sleep 0.1
}

down() {
  # Daemons that tools/cluster/ started for the testbed (Slurm, munge) stop
  # through their own hook, if present.
  if [ -x "$HERE/testbed_daemons.sh" ]; then "$HERE/testbed_daemons.sh" stop || true; fi
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX[0-9]+$" || true); do
    kill_inside "$ns"
    ip netns del "$ns"
  done
  if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx $BRIDGE_NS; then
    ip netns del $BRIDGE_NS
  fi
  if [ -d "$STATE/uts" ]; then
    local f
    for f in "$STATE"/uts/*; do
      [ -e "$f" ] || continue
      umount "$f" 2>/dev/null || true
      rm -f "$f"
    done
    umount "$STATE/uts" 2>/dev/null || true
  fi
  rm -rf "$STATE"
  echo "testbed: down"
}

hosts() { [ -f "$STATE/hosts" ] || die "no testbed is up"; cat "$STATE/hosts"; }

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down ;;
  check) check && echo "testbed: this machine can run one" ;;
  hosts) hosts ;;
  run) shift; exec "$HERE/testbed_exec.sh" "$@" ;;
  *) die "usage: testbed.sh up N | down | check | hosts | run HOST CMD..." ;;
esac
