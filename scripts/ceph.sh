#!/usr/bin/env bash
# A single-node Ceph on 127.0.0.1 for tests, benches and users who want to try iolab on a
# real distributed file system: one mon, one mgr, bluestore OSDs each on a loop device over
# a sparse file, one MDS, CephFS mounted with ceph-fuse, and optionally the RADOS Gateway.
#
#   scripts/ceph.sh up   [--state DIR] [--ports auto|BASE] [--osds N] [--osd-size SIZE]
#                        [--osd-dir DIR] [--rgw] [--pool-per-osd] [--no-mount] [--env FILE]
#   scripts/ceph.sh down [--state DIR]
#   scripts/ceph.sh status|env [--state DIR]
#   scripts/ceph.sh stop|start DAEMON [--state DIR]   (DAEMON: mds.a, osd.N, mgr.x, ...)
#
# `up` installs Ceph (Debian: ceph ceph-mds ceph-fuse radosgw) with apt-get when it is
# missing, builds the cluster in DIR (default /var/tmp/iolab-ceph), waits until the MDS is
# active and CephFS is mounted (and the gateway answers), then prints a shell-sourceable
# env file (also DIR/env): CEPH_CONF (export it and `ceph -s` works), CEPHFS_MOUNT, the
# OSDs' loop devices, and with --rgw the S3 endpoint and its keys. `up` on a running
# cluster prints it again and changes nothing. `down` unmounts CephFS and waits for
# ceph-fuse to exit before it stops the MDS (a client whose MDS is gone hangs), stops every
# daemon by its recorded PID, detaches its loop devices and removes DIR.
#
# --ports: the mon listens on 3300 by default (BASE with --ports BASE, a free port with
# auto); the gateway on 7480 (BASE+1); the other daemons bind free ports in 6800-7300 as
# Ceph's do; clusters starting at the same time pick their ports one at a time (the port
# lock of scripts/lib/cluster.sh, held until the mon, or with --rgw the gateway, listens).
# --osd-dir puts the OSDs' sparse images elsewhere (a tmpfs such as /dev/shm
# takes the disk's noise out of comparisons). --pool-per-osd adds a data pool per OSD and a
# directory osd.N at the top of CephFS whose files are stored on osd.N alone: one storage
# target per OSD for `iolab targets`. `stop`/`start` stop and restart one daemon (to test
# a restart in the middle of a run).
#
# Learned the hard way (BENCH-NOTES.md): pool size 1 needs mon_allow_pool_size_one; the
# MDS is waited for with `ceph mds stat` (not `ceph fs status`, which colours); an active
# MDS may ignore SIGTERM; admin_socket stays out of [client]; loop devices are shared, so
# only those this script attached (recorded in DIR) are detached.
#
# Disk: the OSD images are sparse, so they take disk only as data is written, but they can
# grow to --osd-size each; an image that outgrows its disk fails the OSD's writes (EIO from
# the loop device) long after `up`. So `up` refuses (one line) unless the images' file
# system has --osd-size x --osds free, and DIR's 256 MiB more (the mon's store, the logs).
# Size the OSD for what a run stores: Ceph warns at 85 % of it (nearfull) and stops taking
# writes at 95 % (mon_osd_full_ratio; bluestore's own failsafe is 97 %), and bluestore keeps
# its RocksDB on the same device. When a wait fails, `up` prints the daemons' last log
# lines, `df -h` of DIR and free memory.
set -euo pipefail

me=ceph.sh
cmd=${1:-}
[ $# -gt 0 ] && shift
daemon=""
case "$cmd" in
    stop|start) daemon=${1:?$cmd needs a daemon such as mds.a or osd.0}; shift ;;
esac
state=${CEPH_STATE:-/var/tmp/iolab-ceph}
ports=default
osds=1
osd_size=8G
osd_dir=""
rgw=0
pool_per_osd=0
mount=1
env_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --ports) ports=${2:?--ports needs auto or a base port}; shift 2 ;;
        --osds) osds=${2:?--osds needs a count}; shift 2 ;;
        --osd-size) osd_size=${2:?--osd-size needs a size such as 8G}; shift 2 ;;
        --osd-dir) osd_dir=${2:?--osd-dir needs a directory}; shift 2 ;;
        --rgw) rgw=1; shift ;;
        --pool-per-osd) pool_per_osd=1; shift ;;
        --no-mount) mount=0; shift ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        *) echo "$me: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env|stop|start) ;;
    *) echo "usage: $0 up|down|status|env|stop DAEMON|start DAEMON [--state DIR] [--ports auto|BASE] [--osds N] [--rgw] ..." >&2; exit 2 ;;
esac
case "$osds" in ''|*[!0-9]*|0) echo "$me: --osds takes a count of 1 or more, not '$osds'" >&2; exit 2 ;; esac
state=$(realpath -m "$state")
conf="$state/ceph.conf"
marker=.iolab-ceph
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"

c() { ceph -c "$conf" --connect-timeout 20 "$@"; }

# Every daemon's PID file is DIR/run/<name>.pid; its command line holds its binary's name.
pattern_of() {
    case "$1" in
        mon.*) echo ceph-mon ;; mgr.*) echo ceph-mgr ;; osd.*) echo ceph-osd ;;
        mds.*) echo ceph-mds ;; client.rgw*) echo radosgw ;; fuse) echo ceph-fuse ;;
    esac
}
alive_d() { alive "$state/run/$1.pid" "$(pattern_of "$1")"; }
stop_d() { stop_pid "$state/run/$1.pid" "$(pattern_of "$1")" "${2:-30}"; }

start_d() { # name -> starts that daemon in the foreground, in the background, PID recorded
    local name=$1 id=${1#*.}
    local log="$state/log/$name.out"
    case "$name" in
        mon.*) setsid ceph-mon -c "$conf" -i "$id" -f </dev/null >>"$log" 2>&1 & ;;
        mgr.*) setsid ceph-mgr -c "$conf" -i "$id" -f </dev/null >>"$log" 2>&1 & ;;
        osd.*) setsid ceph-osd -c "$conf" -i "$id" -f </dev/null >>"$log" 2>&1 & ;;
        mds.*) setsid ceph-mds -c "$conf" -i "$id" -f </dev/null >>"$log" 2>&1 & ;;
        client.rgw*) setsid radosgw -c "$conf" -n "$name" -f </dev/null >>"$log" 2>&1 & ;;
        *) die "no daemon '$name' (mon.a, mgr.x, osd.N, mds.a, client.rgw.a)" ;;
    esac
    spawned $! "$state/run/$name.pid" "$(pattern_of "$name")"
}

daemons() { # every daemon of this cluster that has a PID file, in stopping order
    local f n
    for n in client.rgw.a mds.a; do [ -e "$state/run/$n.pid" ] && echo "$n"; done
    for f in "$state"/run/osd.*.pid; do [ -e "$f" ] && basename "$f" .pid; done
    for n in mgr.x mon.a; do [ -e "$state/run/$n.pid" ] && echo "$n"; done
    return 0
}

stop_all() {
    local n f
    # CephFS first, and its client gone, while the MDS can still close its session.
    unmount_fuse "$state/mnt"
    stop_d fuse 100
    for n in $(daemons); do
        # An active MDS may ignore SIGTERM; the cluster is discarded next, so a short grace.
        stop_d "$n" 30
    done
    unmount_fuse "$state/mnt"
    for f in "$state"/run/loop.*; do
        [ -e "$f" ] || continue
        local dev img
        dev=$(cut -d' ' -f1 "$f"); img=$(cut -d' ' -f2- "$f")
        # Only the loop device this script attached: it must still be backed by our image.
        if losetup -nO BACK-FILE "$dev" 2>/dev/null | grep -qF "$img"; then
            losetup -d "$dev" || say "could not detach $dev"
        fi
        rm -f "$f"
    done
    for f in "$state"/run/image.*; do
        [ -e "$f" ] || continue
        rm -f "$(cat "$f")" "$f"
    done
}

install_ceph() {
    local missing=() p
    for p in ceph-mon:ceph ceph-mds:ceph-mds ceph-fuse:ceph-fuse radosgw:radosgw; do
        command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p#*:}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]} with apt-get"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        ceph ceph-mds ceph-fuse radosgw >&2
}

write_conf() {
    cat >"$conf" <<EOF
# A single-node Ceph made by scripts/ceph.sh; everything it writes is under $state.
[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon_host = [v2:127.0.0.1:$P_MON]
mon_initial_members = a
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
auth_allow_insecure_global_id_reclaim = false
ms_bind_ipv6 = false
ms_bind_msgr1 = false
keyring = $state/keyring
run_dir = $state/run
log_file = $state/log/\$name.log
admin_socket = $state/run/\$name.asok
pid_file =
crash_dir = $state/crash
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 1
mon_data_avail_crit = 0
mon_max_pg_per_osd = 1000
mgr_initial_modules = iostat
[mon]
mon_data = $state/mon/\$cluster-\$id
[mgr]
mgr_data = $state/mgr/\$cluster-\$id
[osd]
osd_data = $state/osd/\$cluster-\$id
osd_objectstore = bluestore
osd_memory_target = 939524096
bluestore_cache_autotune = true
[mds]
mds_data = $state/mds/\$cluster-\$id
mds_cache_memory_limit = 268435456
[client]
admin_socket =
log_file = $state/log/client.\$pid.log
[client.rgw.a]
admin_socket = $state/run/\$name.asok
rgw_frontends = beast endpoint=127.0.0.1:$P_RGW
rgw_data = $state/rgw
EOF
}

write_env() {
    local f="$state/env" i
    {
        echo "# Ceph from scripts/ceph.sh (state $state)"
        echo "CEPH_STATE=$state"
        echo "CEPH_CONF=$conf"
        echo "CEPH_MON=127.0.0.1:$P_MON"
        if [ "$mount" = 1 ]; then
            echo "CEPHFS_MOUNT=$state/mnt"
            # `ceph --admin-daemon $CEPHFS_ASOK perf dump` shows ceph-fuse's own cache.
            echo "CEPHFS_ASOK=$state/run/fuse.asok"
        else
            echo "CEPHFS_MOUNT="
        fi
        echo "CEPH_OSDS=$osds"
        echo -n "CEPH_OSD_DEVICES=\""
        for i in $(seq 0 $((osds - 1))); do
            [ -e "$state/run/loop.$i" ] && echo -n "$([ "$i" -gt 0 ] && echo ' ')$(cut -d' ' -f1 "$state/run/loop.$i")"
        done
        echo "\""
        echo "CEPH_PORTS=\"$P_MON$([ "$rgw" = 1 ] && echo " $P_RGW")\""
        if [ "$pool_per_osd" = 1 ]; then
            echo -n "CEPHFS_OSD_DIRS=\""
            for i in $(seq 0 $((osds - 1))); do echo -n "$([ "$i" -gt 0 ] && echo ' ')$state/mnt/osd.$i"; done
            echo "\""
        fi
        if [ "$rgw" = 1 ]; then
            echo "CEPH_RGW_ENDPOINT=http://127.0.0.1:$P_RGW"
            echo "AWS_ACCESS_KEY_ID=$(cat "$state/rgw.access")"
            echo "AWS_SECRET_ACCESS_KEY=$(cat "$state/rgw.secret")"
            echo "AWS_DEFAULT_REGION=us-east-1"
            echo "AWS_ENDPOINT_URL=http://127.0.0.1:$P_RGW"
        fi
    } >"$f.tmp"
    mv "$f.tmp" "$f"
    chmod 600 "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

failed_up() {
    explain "$state"/log/*.out "$state"/log/mon.a.log "$state"/log/osd.*.log "$state"/log/mds.a.log
    stop_all
}

case "$cmd" in
status)
    [ -e "$state/run/mon.a.pid" ] || { echo down; exit 3; }
    for n in $(daemons) fuse; do
        [ -e "$state/run/$n.pid" ] || continue
        if alive_d "$n"; then echo "$n: pid $(cat "$state/run/$n.pid")"; else echo "$n: not running"; fi
    done
    alive_d mon.a && exit 0
    exit 3 ;;
env)
    alive_d mon.a || die "no Ceph is running from $state"
    print_env; exit 0 ;;
stop)
    alive_d "$daemon" || die "$daemon is not running in $state"
    stop_d "$daemon" 100; exit 0 ;;
start)
    [ -e "$state/$marker" ] || die "no Ceph was made in $state"
    alive_d "$daemon" && exit 0
    start_d "$daemon"
    sleep 0.5
    alive_d "$daemon" || die "$daemon exited at once (log: $state/log/$daemon.log)"
    exit 0 ;;
down)
    [ -e "$state" ] || exit 0
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    used=$(grep '^CEPH_PORTS=' "$state/env" 2>/dev/null | cut -d'"' -f2) || true
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
if [ -e "$state/env" ] && alive_d mon.a && alive_d mds.a \
    && { [ "$mount" = 0 ] || { alive_d fuse && stat "$state/mnt" >/dev/null 2>&1; }; } \
    && { [ "$rgw" = 0 ] || alive_d client.rgw.a; }; then
    print_env; exit 0
fi
if [ -e "$state/$marker" ]; then
    # A half-started or crashed cluster: stop what is left and start afresh.
    stop_all
    [ -z "$survivors" ] || die "pid(s)$survivors of the old cluster still run after SIGKILL; leaving $state"
    rm -rf "$state"
fi
osd_bytes=$(numfmt --from=iec "$osd_size" 2>/dev/null) \
    || { echo "$me: --osd-size takes a size such as 2G or 2048M, not '$osd_size'" >&2; exit 2; }
img_dir=$(realpath -m "${osd_dir:-$state}")
if [ "$(fs_of "$state")" = "$(fs_of "$img_dir")" ]; then
    need_free "$img_dir" $((osd_bytes * osds + (256 << 20))) "$osds OSD image(s) of $osd_size (--osd-size) and the cluster's state"
else
    need_free "$img_dir" $((osd_bytes * osds)) "$osds OSD image(s) of $osd_size (--osd-size)"
    need_free "$state" $((256 << 20)) "the cluster's state (the mon's store, logs)"
fi
claim_state "$marker"
for t in ss curl losetup; do command -v "$t" >/dev/null || die "needs '$t' on PATH"; done
[ "$mount" = 0 ] || command -v fusermount3 >/dev/null || command -v fusermount >/dev/null \
    || die "needs fusermount3 (apt-get install fuse3) for the mount; or pass --no-mount"
install_ceph
ports_lock
case "$ports" in
    default) P_MON=3300; P_RGW=7480 ;;
    *) base=$(free_ports "$ports" 2); P_MON=$base; P_RGW=$((base + 1)) ;;
esac
listening "$P_MON" && die "port $P_MON is in use; pass --ports auto or another --ports BASE"
[ "$rgw" = 0 ] || ! listening "$P_RGW" || die "port $P_RGW is in use; pass --ports auto or another --ports BASE"
mkdir -p "$state"/{run,log,crash,mon,mgr,osd,mds,rgw,mnt}
write_conf

# Keys: one keyring for every daemon and the admin, imported into the mon at its birth.
kr="$state/keyring"
ceph-authtool --create-keyring "$kr" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool "$kr" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool "$kr" --gen-key -n mgr.x --cap mon 'allow profile mgr' --cap osd 'allow *' \
    --cap mds 'allow *' >/dev/null
ceph-authtool "$kr" --gen-key -n mds.a --cap mon 'allow profile mds' --cap osd 'allow *' \
    --cap mds 'allow' --cap mgr 'allow profile mds' >/dev/null
ceph-authtool "$kr" --gen-key -n client.rgw.a --cap mon 'allow rw' --cap osd 'allow rwx' \
    --cap mgr 'allow rw' >/dev/null
for i in $(seq 0 $((osds - 1))); do
    ceph-authtool "$kr" --gen-key -n "osd.$i" --cap mon 'allow profile osd' \
        --cap mgr 'allow profile osd' --cap osd 'allow *' >/dev/null
done
chmod 600 "$kr"

fsid=$(awk '$1 == "fsid" { print $3 }' "$conf")
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$P_MON]" "$state/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$state/monmap" --keyring "$kr" >"$state/log/mkfs.out" 2>&1 \
    || { cat "$state/log/mkfs.out" >&2; failed_up; die "ceph-mon --mkfs failed"; }
start_d mon.a
wait_until 30 "the mon" failed_up ceph -c "$conf" --connect-timeout 10 -s
# The mon has bound its port; the gateway's is held until the gateway listens.
[ "$rgw" = 1 ] || ports_unlock
start_d mgr.x

# OSDs: a sparse image, a loop device over it, bluestore on the device.
mkdir -p "$img_dir"
for i in $(seq 0 $((osds - 1))); do
    img="$img_dir/$(basename "$state")-osd.$i.img"
    [ -e "$img" ] && die "$img exists; remove it or choose another --osd-dir"
    truncate -s "$osd_size" "$img"
    echo "$img" >"$state/run/image.$i"
    dev=$(losetup -f --show "$img") || { failed_up; die "no free loop device for $img"; }
    echo "$dev $img" >"$state/run/loop.$i"
    uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(c osd new "$uuid" 2>/dev/null) || { failed_up; die "ceph osd new failed"; }
    [ "$id" = "$i" ] || { failed_up; die "the mon gave osd.$id where osd.$i was expected"; }
    mkdir -p "$state/osd/ceph-$i"
    ln -s "$dev" "$state/osd/ceph-$i/block"
    ceph-osd -c "$conf" -i "$i" --mkfs --osd-uuid "$uuid" >"$state/log/osd.$i.mkfs.out" 2>&1 \
        || { cat "$state/log/osd.$i.mkfs.out" >&2; failed_up; die "ceph-osd --mkfs failed for osd.$i"; }
    start_d "osd.$i"
done
wait_until 60 "$osds OSD(s) up" failed_up sh -c "ceph -c '$conf' osd stat | grep -q '$osds up'"

c osd pool create cephfs_metadata 8 >/dev/null 2>&1
c osd pool create cephfs_data 8 >/dev/null 2>&1
c fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>&1
start_d mds.a
wait_until 60 "the MDS (up:active)" failed_up sh -c "ceph -c '$conf' mds stat | grep -q up:active"

if [ "$pool_per_osd" = 1 ]; then
    # osd.N under a CRUSH host of its own, a rule taking that host, a pool on that rule.
    for i in $(seq 0 $((osds - 1))); do
        c osd crush add-bucket "iolab-osd$i" host >/dev/null 2>&1
        c osd crush move "iolab-osd$i" root=default >/dev/null 2>&1
        c osd crush set "osd.$i" 1.0 "host=iolab-osd$i" >/dev/null 2>&1
        c osd crush rule create-simple "on-osd$i" "iolab-osd$i" osd >/dev/null 2>&1
        c osd pool create "osd$i" 8 8 replicated "on-osd$i" >/dev/null 2>&1
        c fs add_data_pool cephfs "osd$i" >/dev/null 2>&1
    done
fi

if [ "$rgw" = 1 ]; then
    start_d client.rgw.a
    wait_until 90 "the RADOS Gateway on 127.0.0.1:$P_RGW" failed_up curl -s -o /dev/null "http://127.0.0.1:$P_RGW/"
    ports_unlock
    head -c 10 /dev/urandom | od -An -tx1 | tr -d ' \n' | sed 's/^/IOLAB/' | tr a-z A-Z >"$state/rgw.access"
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$state/rgw.secret"
    radosgw-admin -c "$conf" user create --uid=iolab --display-name=iolab \
        --access-key="$(cat "$state/rgw.access")" --secret="$(cat "$state/rgw.secret")" >/dev/null 2>&1 \
        || { failed_up; die "radosgw-admin user create failed"; }
    chmod 600 "$state/rgw.access" "$state/rgw.secret"
fi

if [ "$mount" = 1 ]; then
    setsid ceph-fuse -c "$conf" --admin-socket "$state/run/fuse.asok" -f "$state/mnt" </dev/null >>"$state/log/fuse.out" 2>&1 &
    spawned $! "$state/run/fuse.pid" ceph-fuse
    for _ in $(seq 300); do
        is_mounted "$state/mnt" && stat "$state/mnt" >/dev/null 2>&1 && break
        alive_d fuse || { failed_up; die "ceph-fuse exited (log: $state/log/fuse.out)"; }
        sleep 0.1
    done
    is_mounted "$state/mnt" || { failed_up; die "ceph-fuse did not mount $state/mnt in 30 s"; }
    if [ "$pool_per_osd" = 1 ]; then
        for i in $(seq 0 $((osds - 1))); do
            mkdir "$state/mnt/osd.$i"
            setfattr -n ceph.dir.layout.pool -v "osd$i" "$state/mnt/osd.$i" 2>/dev/null \
                || python3 -c 'import os,sys; os.setxattr(sys.argv[1], "ceph.dir.layout.pool", sys.argv[2].encode())' \
                    "$state/mnt/osd.$i" "osd$i"
        done
    fi
fi
write_env
print_env
