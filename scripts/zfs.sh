#!/usr/bin/env bash
# A real ZFS pool in user space for tests, benches and users who want to see what a
# compressing, copy-on-write pool does to iolab's data: Debian's zfs-fuse (ZFS pool
# version 23) with its pool on a sparse file, optionally a separate log device (SLOG) on
# a file elsewhere, and one dataset mounted through FUSE.
#
#   scripts/zfs.sh up   [--state DIR] [--size SIZE] [--image-dir DIR] [--log] [--log-dir DIR]
#                       [--log-size SIZE] [--compression gzip|gzip-N|lzjb|zle|off]
#                       [--recordsize SIZE] [--ashift 9|12] [--mount DIR] [--arc MB]
#                       [--wait SECS] [--env FILE]
#   scripts/zfs.sh down [--state DIR]
#   scripts/zfs.sh status|env|sync [--state DIR]
#
# `up` builds the pool in DIR (default /var/tmp/iolab-zfs): DIR/pool.img (--size, default
# 1G, sparse; --image-dir puts it elsewhere), with --log a log device of --log-size (default
# 128M, ZFS's minimum is 64M) on a file in --log-dir (default /dev/shm: memory standing in
# for the Optane SSD or DIMM of the ZFS study, next to the pool's disk), the pool's dataset
# mounted at --mount (default DIR/mnt) with compression (default off) and recordsize
# (default 128k) set, its devices' sector size 2^--ashift (default 12: 4 KiB, zfs-fuse's
# choice for files; 9 stores a compressed record rounded up to 512 bytes, not 4 KiB), then
# prints a shell-sourceable env file (also DIR/env): ZFS_POOL, ZFS_MOUNT, ZFS_POOL_IMAGE,
# ZFS_LOG_IMAGE (empty without --log), ZFS_COMPRESSION, ZFS_RECORDSIZE, ZFS_ASHIFT,
# ZFS_PID. `up` on a running pool prints it again and changes nothing.
# `sync` commits the pool's open transaction group (a snapshot made and destroyed: this
# zfs has no `zpool sync`), so `zfs get compressratio,used $ZFS_POOL` shows what was
# written. `down` destroys the pool, stops zfs-fuse by its PID, and removes every file `up`
# made (the images, the log device, DIR, /var/run/zfs if `up` made it).
#
# One zfs-fuse per machine: the zfs and zpool commands reach it through a fixed socket,
# /var/run/zfs/zfs_socket, and a second daemon takes that socket over from the first (both
# then run, one unreachable). So `up` refuses, in one line naming it, while any zfs-fuse
# runs, or with --wait SECS waits up to SECS for it to exit (tests in several processes at
# once). The check and the start are one at a time on the machine (the start lock of
# scripts/lib/cluster.sh, on its own file, held until the new daemon's socket answers).
#
# Learned here (BENCH-NOTES.md): zfs-fuse 0.7 runs as root with /dev/fuse; `-p PIDFILE` is
# ignored with --no-daemon (the PID recorded is the one this script started); the pool is
# created with cachefile=none, so nothing is written to /var/lib/zfs/zpool.cache and no
# later zfs-fuse imports it; file vdevs get ashift=12 (4 KiB sectors) unless told, so a
# compressed record is stored rounded up to 4 KiB (a record that halves takes 68 of 128
# KiB); compression is lzjb, gzip-1..9 or zle (no lz4 or zstd: pool version 23); SIGTERM
# takes it a few seconds; `zpool destroy` right after a writer closed its file may find
# the pool busy for a moment.
set -euo pipefail

me=zfs.sh
cmd=${1:-}
[ $# -gt 0 ] && shift
state=${ZFS_STATE:-/var/tmp/iolab-zfs}
size=1G
image_dir=""
log=0
log_dir=/dev/shm
log_size=128M
compression=off
recordsize=128k
ashift=12
mount_dir=""
arc=64
wait_secs=0
env_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --size) size=${2:?--size needs a size such as 1G}; shift 2 ;;
        --image-dir) image_dir=${2:?--image-dir needs a directory}; shift 2 ;;
        --log) log=1; shift ;;
        --log-dir) log=1; log_dir=${2:?--log-dir needs a directory}; shift 2 ;;
        --log-size) log_size=${2:?--log-size needs a size such as 128M}; shift 2 ;;
        --compression) compression=${2:?--compression needs gzip, gzip-N, lzjb, zle or off}; shift 2 ;;
        --recordsize) recordsize=${2:?--recordsize needs a size from 512 to 128k}; shift 2 ;;
        --ashift) ashift=${2:?--ashift needs 9 to 13}; shift 2 ;;
        --mount) mount_dir=${2:?--mount needs a directory}; shift 2 ;;
        --arc) arc=${2:?--arc needs megabytes}; shift 2 ;;
        --wait) wait_secs=${2:?--wait needs seconds}; shift 2 ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        # Accepted for the callers of every cluster script (tests pass it): no ports here.
        --ports) shift 2 ;;
        *) echo "$me: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env|sync) ;;
    *) echo "usage: $0 up|down|status|env|sync [--state DIR] [--size SIZE] [--log] [--compression gzip|lzjb|off] ..." >&2; exit 2 ;;
esac
bad() { echo "$me: $*" >&2; exit 2; }
case "$compression" in
    off|on|lzjb|gzip|gzip-[1-9]|zle) ;;
    *) bad "--compression takes gzip, gzip-1..9, lzjb, zle or off (this zfs-fuse has no lz4 or zstd), not '$compression'" ;;
esac
case "$recordsize" in
    512|1[kK]|2[kK]|4[kK]|8[kK]|16[kK]|32[kK]|64[kK]|128[kK]) ;;
    *) bad "--recordsize takes a power of 2 from 512 to 128k, not '$recordsize'" ;;
esac
case "$ashift" in 9|10|11|12|13) ;; *) bad "--ashift takes 9 to 13 (sectors of 512 bytes to 8 KiB), not '$ashift'" ;; esac
case "$arc" in ''|*[!0-9]*) bad "--arc takes megabytes (16 to 16384), not '$arc'" ;; esac
[ "$arc" -ge 16 ] && [ "$arc" -le 16384 ] || bad "--arc takes megabytes (16 to 16384), not '$arc'"
case "$wait_secs" in ''|*[!0-9]*) bad "--wait takes whole seconds, not '$wait_secs'" ;; esac
size_bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bad "--size takes a size such as 1G or 512M, not '$size'"
log_bytes=$(numfmt --from=iec "$log_size" 2>/dev/null) || bad "--log-size takes a size such as 128M, not '$log_size'"
[ "$size_bytes" -ge $((64 << 20)) ] || bad "--size must be at least 64M (ZFS's smallest device), not '$size'"
[ "$log_bytes" -ge $((64 << 20)) ] || bad "--log-size must be at least 64M (ZFS's smallest device), not '$log_size'"
state=$(realpath -m "$state")
marker=.iolab-zfs
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
# The start lock: one zfs-fuse is checked for and started at a time on this machine.
ports_lock_file=${IOLAB_ZFS_LOCK:-/tmp/iolab-zfs-start.lock}
rundir=/var/run/zfs
socket=$rundir/zfs_socket

pidf="$state/run/zfs-fuse.pid"
daemon_alive() { alive "$pidf" zfs-fuse; }
pool() { cat "$state/run/pool" 2>/dev/null || true; }

# Any zfs-fuse on this machine, ours or not (its PID), or nothing; a zombie holds nothing.
any_zfs_fuse() {
    local p
    for p in $(pgrep -x zfs-fuse || true); do
        case "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" in '' | Z | X) ;; *) echo "$p"; return 0 ;; esac
    done
}

# Destroys our pool (retrying while it is busy for a moment), stops our daemon, unmounts
# what it left mounted, removes the files this script made outside DIR.
stop_all() {
    local p f i
    p=$(pool)
    if [ -n "$p" ] && daemon_alive && zpool list -H -o name "$p" >/dev/null 2>&1; then
        for i in $(seq 60); do
            timeout 60 zpool destroy -f "$p" >/dev/null 2>&1 && break
            sleep 0.5
        done
        zpool list -H -o name "$p" >/dev/null 2>&1 && say "could not destroy pool $p"
    fi
    stop_pid "$pidf" zfs-fuse 150
    [ -z "$(cat "$state/run/mount" 2>/dev/null)" ] || unmount_fuse "$(cat "$state/run/mount")"
    # A daemon killed before it could remove its socket leaves it; nobody else's then
    # (one daemon per machine), unless another zfs-fuse runs now.
    if [ -e "$state/run/started" ] && [ -z "$survivors" ] && [ -z "$(any_zfs_fuse)" ]; then
        rm -f "$socket"
    fi
    for f in "$state"/run/file.*; do
        [ -e "$f" ] || continue
        rm -f "$(cat "$f")" "$f"
    done
    if [ -e "$state/run/made-rundir" ] && [ -z "$survivors" ]; then
        rmdir "$rundir" 2>/dev/null || true
        rm -f "$state/run/made-rundir"
    fi
}

write_env() {
    local f="$state/env"
    {
        echo "# ZFS (zfs-fuse) from scripts/zfs.sh (state $state)"
        echo "ZFS_STATE=$state"
        echo "ZFS_POOL=$(pool)"
        echo "ZFS_MOUNT=$(cat "$state/run/mount")"
        echo "ZFS_POOL_IMAGE=$(cat "$state/run/file.pool")"
        echo "ZFS_LOG_IMAGE=$(cat "$state/run/file.log" 2>/dev/null || true)"
        echo "ZFS_COMPRESSION=$compression"
        echo "ZFS_RECORDSIZE=$recordsize"
        echo "ZFS_ASHIFT=$ashift"
        echo "ZFS_PID=$(cat "$pidf")"
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

failed_up() {
    explain "$state/log/zfs-fuse.out" "$state/log/zpool.out"
    stop_all
}

# Under the start lock: returns once no zfs-fuse runs (waiting up to --wait seconds for one
# to exit, the lock let go meanwhile so its owner can take it down), or dies naming it.
wait_for_the_daemon() {
    local end=$((SECONDS + wait_secs)) other owner
    while true; do
        ports_lock
        other=$(any_zfs_fuse)
        [ -n "$other" ] || return 0
        ports_unlock
        owner=$( (tr '\0' '\n' </proc/"$other"/environ | sed -n 's/^IOLAB_ZFS_STATE=//p') 2>/dev/null || true)
        [ "$SECONDS" -lt "$end" ] || die "zfs-fuse already runs on this machine (pid $other$([ -z "$owner" ] || echo ", from $owner")) and there can be one only (its socket is $socket): $([ -n "$owner" ] && echo "scripts/zfs.sh down --state $owner first" || echo "stop it first"), or pass --wait SECS"
        sleep 0.5
    done
}

case "$cmd" in
status)
    [ -e "$pidf" ] || { echo down; exit 3; }
    if daemon_alive; then
        echo "zfs-fuse: pid $(cat "$pidf")"
        zpool list -H -o name,size,allocated,health "$(pool)" 2>/dev/null || echo "pool $(pool): not imported"
        exit 0
    fi
    echo "zfs-fuse: not running"
    exit 3 ;;
env)
    daemon_alive || die "no zfs-fuse is running from $state"
    print_env; exit 0 ;;
sync)
    daemon_alive || die "no zfs-fuse is running from $state"
    # Creating a snapshot commits the open transaction group; the snapshot goes at once.
    snap="$(pool)@iolab-sync-$$"
    zfs snapshot "$snap" && zfs destroy "$snap"
    exit 0 ;;
down)
    [ -e "$state" ] || exit 0
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    stop_all
    [ -z "$survivors" ] || die "pid(s)$survivors still run after SIGKILL; leaving $state (run down again)"
    m=$(cat "$state/run/mount" 2>/dev/null || true)
    [ -z "$m" ] || ! is_mounted "$m" || die "$m is still mounted; leaving $state"
    # A --mount outside DIR: the directory `up` made for it, if empty.
    [ -z "$m" ] || [ ! -e "$state/run/made-mount" ] || rmdir "$m" 2>/dev/null || true
    rm -rf "$state"
    exit 0 ;;
esac

# up
if [ -e "$state/env" ] && daemon_alive && is_mounted "$(cat "$state/run/mount")"; then
    print_env; exit 0
fi
if [ -e "$state/$marker" ]; then
    # A half-started or crashed pool: take what is left away and start afresh.
    stop_all
    [ -z "$survivors" ] || die "pid(s)$survivors of the old pool still run after SIGKILL; leaving $state"
    rm -rf "$state"
fi
[ "$(id -u)" -eq 0 ] || die "zfs-fuse needs root (it mounts through /dev/fuse and reads its pool's files)"
for t in zfs-fuse zpool zfs; do command -v "$t" >/dev/null || die "needs '$t' on PATH (apt-get install zfs-fuse)"; done
[ -c /dev/fuse ] || die "needs /dev/fuse (modprobe fuse; in a container, pass the device)"
img_dir=$(realpath -m "${image_dir:-$state}")
need_free "$img_dir" $((size_bytes + (16 << 20))) "the pool's image of $size (--size)"
[ "$log" = 0 ] || need_free "$log_dir" "$log_bytes" "the log device of $log_size (--log-size)"
mnt=$(realpath -m "${mount_dir:-$state/mnt}")
is_mounted "$mnt" && die "$mnt is already a mount point; choose another --mount"
[ ! -e "$mnt" ] || [ -z "$(ls -A "$mnt" 2>/dev/null)" ] || die "$mnt is not empty; choose another --mount"
# Nothing is made before the machine's one zfs-fuse is free (a refused `up` leaves nothing).
wait_for_the_daemon
claim_state "$marker"
mkdir -p "$state/run" "$state/log"
echo "$mnt" >"$state/run/mount"
# Pool names are one namespace per daemon; a name of our own all the same.
name="iolab-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$name" >"$state/run/pool"
if [ ! -d "$rundir" ]; then
    mkdir -p "$rundir"
    touch "$state/run/made-rundir"
fi
touch "$state/run/started"
# Its state directory in its environment, so that a refused `up` can name it.
(cd / && export IOLAB_ZFS_STATE="$state" && exec setsid zfs-fuse --no-daemon --no-kstat-mount -m "$arc" </dev/null >>"$state/log/zfs-fuse.out" 2>&1) &
spawned $! "$pidf" zfs-fuse
wait_until 30 "zfs-fuse (its socket $socket)" failed_up sh -c "test -S $socket && zpool list"
daemon_alive || { failed_up; die "zfs-fuse exited (log: $state/log/zfs-fuse.out)"; }
ports_unlock

mkdir -p "$img_dir"
img="$img_dir/$(basename "$state")-pool.img"
[ "$img_dir" = "$state" ] && img="$state/pool.img"
[ -e "$img" ] && { failed_up; die "$img exists; remove it or choose another --image-dir"; }
echo "$img" >"$state/run/file.pool"
truncate -s "$size" "$img"
vdevs=("$img")
if [ "$log" = 1 ]; then
    mkdir -p "$log_dir"
    limg="$(realpath -m "$log_dir")/iolab-zfs-$name-log.img"
    echo "$limg" >"$state/run/file.log"
    truncate -s "$log_size" "$limg"
    vdevs+=(log "$limg")
fi
if [ ! -e "$mnt" ]; then
    mkdir -p "$mnt"
    case "$mnt" in "$state"/*) ;; *) touch "$state/run/made-mount" ;; esac
fi
zpool create -o cachefile=none -o ashift="$ashift" -O compression="$compression" -O recordsize="$recordsize" \
    -O atime=off -m "$mnt" "$name" "${vdevs[@]}" >"$state/log/zpool.out" 2>&1 \
    || { failed_up; die "zpool create failed: $(grep -v '^Defaulting' "$state/log/zpool.out" | head -n 3 | tr '\n' ' ')"; }
for _ in $(seq 100); do is_mounted "$mnt" && break; sleep 0.1; done
is_mounted "$mnt" || { failed_up; die "the pool's dataset did not mount at $mnt in 10 s"; }
write_env
print_env
