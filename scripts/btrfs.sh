#!/usr/bin/env bash
# A compressing btrfs for tests, benches and users who want to see what a file system
# that compresses stores of iolab's data: btrfs on a loop device over a sparse image file,
# mounted with compress-force, and compsize to read what was stored.
#
#   scripts/btrfs.sh up   [--state DIR] [--size SIZE] [--image-dir DIR]
#                         [--compress zstd|zstd:N|lzo|zlib|zlib:N|none] [--mount DIR] [--env FILE]
#   scripts/btrfs.sh down [--state DIR]
#   scripts/btrfs.sh status|env|sync [--state DIR]
#
# `up` makes DIR (default /var/tmp/iolab-btrfs), a sparse image DIR/btrfs.img of --size
# (default 1G; --image-dir puts it elsewhere), attaches a free loop device to it
# (`losetup -f --show`), makes btrfs on it and mounts it at --mount (default DIR/mnt) with
# compress-force=--compress (default zstd:3; `none` mounts without compression), then
# prints a shell-sourceable env file (also DIR/env): BTRFS_MOUNT, BTRFS_DEVICE,
# BTRFS_IMAGE, BTRFS_COMPRESS. `up` on a mounted one prints it again and changes nothing.
# `sync` writes out what is cached (`btrfs filesystem sync`), after which `compsize FILE`
# shows the bytes stored (Disk Usage) against the bytes written (Uncompressed).
# `down` unmounts, detaches the loop device this script attached (loop devices are
# shared: only the one recorded in DIR, and only while our image backs it) and removes
# the image and DIR.
#
# Learned here (BENCH-NOTES.md): compress-force, not compress: plain `compress` gives up on
# a file whose first blocks do not shrink; btrfs compresses in extents of up to 128 KiB and
# stores each rounded up to 4 KiB, so data that halves stores as about 68 KiB per 128 KiB
# (a ratio of 1.88, not 2); fio's default fallocate=native preallocates and btrfs then
# stores uncompressed (give fio --fallocate=none); compsize needs root.
set -euo pipefail

me=btrfs.sh
cmd=${1:-}
[ $# -gt 0 ] && shift
state=${BTRFS_STATE:-/var/tmp/iolab-btrfs}
size=1G
image_dir=""
compress=zstd:3
mount_dir=""
env_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --size) size=${2:?--size needs a size such as 1G}; shift 2 ;;
        --image-dir) image_dir=${2:?--image-dir needs a directory}; shift 2 ;;
        --compress) compress=${2:?--compress needs zstd, zstd:N, lzo, zlib or none}; shift 2 ;;
        --mount) mount_dir=${2:?--mount needs a directory}; shift 2 ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        # Accepted for the callers of every cluster script (tests pass it): no ports here.
        --ports) shift 2 ;;
        *) echo "$me: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env|sync) ;;
    *) echo "usage: $0 up|down|status|env|sync [--state DIR] [--size SIZE] [--compress zstd:3] ..." >&2; exit 2 ;;
esac
bad() { echo "$me: $*" >&2; exit 2; }
case "$compress" in
    none|zstd|lzo|zlib) ;;
    zstd:[1-9]|zstd:1[0-5]|zlib:[1-9]) ;;
    *) bad "--compress takes zstd, zstd:1..15, lzo, zlib, zlib:1..9 or none, not '$compress'" ;;
esac
size_bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bad "--size takes a size such as 1G or 512M, not '$size'"
# mkfs.btrfs refuses a device under 114 MiB (single data and DUP metadata).
[ "$size_bytes" -ge $((128 << 20)) ] || bad "--size must be at least 128M (mkfs.btrfs's smallest), not '$size'"
state=$(realpath -m "$state")
marker=.iolab-btrfs
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"

mnt_of() { cat "$state/run/mount" 2>/dev/null || true; }

# Unmounts (a busy mount is retried for 10 s, never detached lazily: its loop device would
# stay held), detaches our loop device, removes our image.
stop_all() {
    local m dev img i
    m=$(mnt_of)
    if [ -n "$m" ] && is_mounted "$m"; then
        for i in $(seq 100); do
            timeout 30 umount "$m" 2>/dev/null && break
            sleep 0.1
        done
    fi
    if [ -e "$state/run/loop" ]; then
        dev=$(cut -d' ' -f1 "$state/run/loop"); img=$(cut -d' ' -f2- "$state/run/loop")
        # Only the loop device this script attached: it must still be backed by our image.
        if losetup -nO BACK-FILE "$dev" 2>/dev/null | grep -qF "$img"; then
            losetup -d "$dev" || say "could not detach $dev"
        fi
        losetup -nO BACK-FILE "$dev" 2>/dev/null | grep -qF "$img" || rm -f "$state/run/loop"
    fi
    if [ -e "$state/run/image" ] && [ ! -e "$state/run/loop" ]; then
        rm -f "$(cat "$state/run/image")" "$state/run/image"
    fi
}

write_env() {
    local f="$state/env"
    {
        echo "# btrfs from scripts/btrfs.sh (state $state)"
        echo "BTRFS_STATE=$state"
        echo "BTRFS_MOUNT=$(mnt_of)"
        echo "BTRFS_DEVICE=$(cut -d' ' -f1 "$state/run/loop")"
        echo "BTRFS_IMAGE=$(cat "$state/run/image")"
        echo "BTRFS_COMPRESS=$compress"
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

mounted_here() { [ -n "$(mnt_of)" ] && is_mounted "$(mnt_of)"; }

case "$cmd" in
status)
    mounted_here || { echo down; exit 3; }
    echo "mounted: $(mnt_of) on $(cut -d' ' -f1 "$state/run/loop")"
    exit 0 ;;
env)
    mounted_here || die "no btrfs is mounted from $state"
    print_env; exit 0 ;;
sync)
    mounted_here || die "no btrfs is mounted from $state"
    btrfs filesystem sync "$(mnt_of)" >/dev/null
    exit 0 ;;
down)
    [ -e "$state" ] || exit 0
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    stop_all
    m=$(mnt_of)
    [ -z "$m" ] || ! is_mounted "$m" || die "$m is still mounted (busy?); leaving $state (run down again)"
    [ ! -e "$state/run/loop" ] || die "$(cut -d' ' -f1 "$state/run/loop") is still attached; leaving $state (run down again)"
    [ -z "$m" ] || [ ! -e "$state/run/made-mount" ] || rmdir "$m" 2>/dev/null || true
    rm -rf "$state"
    exit 0 ;;
esac

# up
if [ -e "$state/env" ] && mounted_here; then
    print_env; exit 0
fi
if [ -e "$state/$marker" ]; then
    # A half-made one: take what is left away and start afresh.
    stop_all
    [ ! -e "$state/run/loop" ] || die "$(cut -d' ' -f1 "$state/run/loop") of the old one is still attached; leaving $state"
    rm -rf "$state"
fi
[ "$(id -u)" -eq 0 ] || die "needs root (loop devices and mount)"
for t in losetup mkfs.btrfs btrfs; do
    command -v "$t" >/dev/null || die "needs '$t' on PATH (apt-get install btrfs-progs)"
done
command -v compsize >/dev/null || say "compsize is not on PATH (apt-get install btrfs-compsize): it reads what was stored"
img_dir=$(realpath -m "${image_dir:-$state}")
need_free "$img_dir" $((size_bytes + (16 << 20))) "the image of $size (--size)"
mnt=$(realpath -m "${mount_dir:-$state/mnt}")
is_mounted "$mnt" && die "$mnt is already a mount point; choose another --mount"
[ ! -e "$mnt" ] || [ -z "$(ls -A "$mnt" 2>/dev/null)" ] || die "$mnt is not empty; choose another --mount"
claim_state "$marker"
mkdir -p "$state/run" "$state/log"
echo "$mnt" >"$state/run/mount"
mkdir -p "$img_dir"
img="$img_dir/$(basename "$state")-btrfs.img"
[ "$img_dir" = "$state" ] && img="$state/btrfs.img"
[ -e "$img" ] && die "$img exists; remove it or choose another --image-dir"
echo "$img" >"$state/run/image"
truncate -s "$size" "$img"
dev=$(losetup -f --show "$img") || { stop_all; die "no free loop device for $img"; }
echo "$dev $img" >"$state/run/loop"
mkfs.btrfs -q -f "$dev" >"$state/log/mkfs.out" 2>&1 \
    || { cat "$state/log/mkfs.out" >&2; stop_all; die "mkfs.btrfs failed on $dev"; }
if [ ! -e "$mnt" ]; then
    mkdir -p "$mnt"
    case "$mnt" in "$state"/*) ;; *) touch "$state/run/made-mount" ;; esac
fi
opts=noatime
[ "$compress" = none ] || opts="$opts,compress-force=$compress"
mount -t btrfs -o "$opts" "$dev" "$mnt" 2>"$state/log/mount.out" \
    || { cat "$state/log/mount.out" >&2; stop_all; die "mount -o $opts $dev $mnt failed"; }
write_env
print_env
