#!/usr/bin/env bash
# A one-node Ceph cluster with an S3 gateway (radosgw) on 127.0.0.1, under one folder: a real S3
# server to publish a home to and `ask --home s3://…` from, for benchmarks and trials. Not a
# production cluster: one monitor, one OSD in memory (memstore: objects are lost at stop), no
# authentication between the daemons, one copy of every object.
#
#   sudo apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw ceph-common
#   deploy/ceph/one-node.sh start DIR     # prints the AWS_* variables to export, then returns
#   deploy/ceph/one-node.sh stop DIR      # stops the daemons and deletes DIR
#
# Start takes ~10-30 s. Ceph 16 (Debian bookworm's) is what this was written against. Optional
# variables: CEPH_RGW_PORT (default: a free port), CEPH_ACCESS_KEY / CEPH_SECRET_KEY (the S3
# user's keys; default: generated), CEPH_MEMSTORE_MB (the OSD's memory, default 2048).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(realpath -m "$2")
conf=$dir/ceph.conf

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_for() {  # wait_for SECONDS WHAT COMMAND...: retry COMMAND until it succeeds
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "one-node.sh: $what did not come up within ${seconds}s; see $dir/log" >&2
  exit 1
}

stop() {
  # Each daemon wrote its pid file under run/; stop those, and only those.
  [[ -f $dir/ceph.conf ]] || { echo "one-node.sh: $dir holds no cluster of this script's" >&2; exit 1; }
  for pidfile in "$dir"/run/*.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

start() {
  for tool in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
    command -v "$tool" >/dev/null || {
      echo "one-node.sh: $tool is missing; install Debian's ceph-mon ceph-osd radosgw ceph-common" >&2
      exit 1
    }
  done
  if [[ -e $dir ]] && [[ -n $(ls -A "$dir") ]]; then
    echo "one-node.sh: $dir is not empty; stop the cluster there first ($0 stop $dir)" >&2
    exit 1
  fi
  mkdir -p "$dir"/{run,log,mon/a,osd/0,rgw}
  local fsid mon_port rgw_port access secret
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  mon_port=$(free_port)
  rgw_port=${CEPH_RGW_PORT:-$(free_port)}
  access=${CEPH_ACCESS_KEY:-$(python3 -c 'import secrets; print(secrets.token_hex(10).upper())')}
  secret=${CEPH_SECRET_KEY:-$(python3 -c 'import secrets; print(secrets.token_hex(20))')}

  # 1. One configuration file for every daemon and tool: everything under $dir, bound to
  #    127.0.0.1, no cephx (the daemons trust each other; only S3 requests are authenticated),
  #    and pools of one copy with few placement groups (one OSD can hold only so many).
  cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
mon data = $dir/mon/\$id
osd data = $dir/osd/\$id
osd objectstore = memstore
memstore device bytes = $(( ${CEPH_MEMSTORE_MB:-2048} * 1024 * 1024 ))
[client.rgw.gw]
# radosgw asks for an encrypted session with the monitor by default, which needs cephx.
ms mon client mode = crc
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $dir/rgw
EOF

  # 2. The monitor: a map with one monitor, its store created, then the daemon.
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring /dev/null
  ceph-mon -c "$conf" -i a
  wait_for 30 "the monitor" ceph -c "$conf" mon stat

  # 3. One OSD in memory: registered with the monitor, its store made, then the daemon (it adds
  #    itself to the CRUSH map at start).
  local osd_uuid
  osd_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  ceph -c "$conf" osd new "$osd_uuid" 0 >/dev/null
  ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" 2>>"$dir/log/osd-mkfs.log"
  ceph-osd -c "$conf" -i 0
  wait_for 60 "the OSD" bash -c "ceph -c '$conf' osd stat -f json | grep -q '\"num_up_osds\":1'"

  # 4. The S3 gateway: it creates its own pools at first start, then serves on the port.
  radosgw -c "$conf" -n client.rgw.gw
  wait_for 90 "radosgw" python3 -c "import socket; socket.create_connection(('127.0.0.1', $rgw_port), 1)"

  # 5. An S3 user whose keys the clients use (the AWS_* variables below).
  radosgw-admin -c "$conf" user create --uid=graphunified --display-name=graphunified \
    --access-key="$access" --secret="$secret" >/dev/null

  cat >"$dir/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$rgw_port
export AWS_ACCESS_KEY_ID=$access
export AWS_SECRET_ACCESS_KEY=$secret
export AWS_REGION=us-east-1
EOF
  cat "$dir/env"
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
