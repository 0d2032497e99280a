# Shared by scripts/seaweedfs.sh and scripts/ceph.sh (sourced, not run): processes
# tracked by PID files, mounts, ports and the state directory's marker.
# The caller sets `me` (its name for messages) and `state` (its state directory).

say() { echo "$me: $*" >&2; }
die() { say "$*"; ports_unlock; exit 1; }

# PID file [name pattern] -> 0 if that process still runs. A zombie does not count (it
# holds nothing and waits only for its reaper), nor a PID reused by another program.
alive() {
    local pid st
    [ -s "$1" ] || return 1
    pid=$(cat "$1")
    st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] || return 1
    [ -z "${2:-}" ] || tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# Records the PID of the daemon just started in the background (`$!`) in a PID file once it
# runs the program named by `pattern`. `cmd &` forks a copy of this shell that execs `cmd` a
# moment later (tens of milliseconds on a loaded machine): until then the PID's command line
# is this script's, and alive() with the daemon's name would call the daemon dead (a CI run's
# `up` failed so: "ceph-fuse exited" with ceph-fuse about to start). Waits up to 10 s for the
# exec, or for the process to be gone (an exec that failed; alive() says so next).
spawned() {
    local pid=$1 f=$2 pattern=$3 i
    echo "$pid" >"$f"
    for i in $(seq 1000); do
        case "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" in '' | Z | X) return 0 ;; esac
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$pattern" && return 0
        sleep 0.01
    done
}

# Stops the process of a PID file: SIGTERM, `grace` tenths of a second, then SIGKILL.
# Removes the PID file, unless the process outlives SIGKILL by 10 s: then its PID is added
# to `survivors` and the file kept, so that `down` keeps the state and can be run again.
# Used only on clusters whose data is discarded next.
survivors=""
stop_pid() {
    local f=$1 pattern=$2 grace=${3:-30} pid i
    alive "$f" "$pattern" || { rm -f "$f"; return 0; }
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq "$grace"); do alive "$f" "$pattern" || break; sleep 0.1; done
    if alive "$f" "$pattern"; then
        kill -KILL "$pid" 2>/dev/null || true
        for i in $(seq 100); do alive "$f" "$pattern" || break; sleep 0.1; done
        if alive "$f" "$pattern"; then
            say "pid $pid ($(basename "$f" .pid)) survived SIGKILL for 10 s"
            survivors="$survivors $pid"
            return 0
        fi
    fi
    rm -f "$f"
}

# /proc/self/mounts, not mountpoint(1): a FUSE mount whose daemon died fails stat().
is_mounted() { awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts; }

# Unmounts a FUSE mount: a live one cleanly; one whose daemon is dead, or alive but no
# longer answering (an unmount waits for it for ever), by aborting its connection through
# fusectl and detaching it lazily.
unmount_fuse() {
    local m=$1 minor ctl=/sys/fs/fuse/connections mounted_ctl=0
    is_mounted "$m" || return 0
    timeout 30 fusermount3 -u "$m" 2>/dev/null && return 0
    timeout 30 umount "$m" 2>/dev/null && return 0
    minor=$(awk -v m="$m" '$5 == m { split($3, d, ":"); print d[2] }' /proc/self/mountinfo | tail -n 1)
    if [ -n "$minor" ]; then
        if [ ! -e "$ctl/$minor" ] && mount -t fusectl none "$ctl" 2>/dev/null; then mounted_ctl=1; fi
        if [ -e "$ctl/$minor/abort" ]; then
            say "$m does not answer: aborting its FUSE connection"
            echo 1 >"$ctl/$minor/abort" || true
        fi
        [ "$mounted_ctl" = 0 ] || umount "$ctl" 2>/dev/null || true
    fi
    fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
}

listening() { # port -> 0 if something on this machine listens on it
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# A port some socket on this machine uses (listening or connected).
port_used() { ss -Htan "sport = :$1" 2>/dev/null | grep -q .; }

# A block of `count` consecutive free ports: at `base`, or at random from 10000 up to the
# kernel's ephemeral range when `base` is "auto": inside it, an outgoing connection of any
# process (the cluster's own daemons talking to each other) may take one of the block's
# ports before the daemon meant for it binds it (seen: weed's volume server failing with
# "bind: address already in use" on a port that was free a moment before).
free_ports() {
    local base=$1 count=$2 b i lo blocks
    lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    blocks=$(((lo - 10000) / count - 1))
    [ "$blocks" -gt 0 ] || blocks=1
    if [ "$base" != auto ]; then
        for i in $(seq 0 $((count - 1))); do
            port_used $((base + i)) && die "port $((base + i)) of --ports $base (the block $base-$((base + count - 1))) is in use on this machine; pass --ports auto or another base"
        done
        echo "$base"
        return 0
    fi
    for _ in $(seq 50); do
        b=$((10000 + (RANDOM % blocks) * count))
        for i in $(seq 0 $((count - 1))); do port_used $((b + i)) && continue 2; done
        echo "$b"
        return 0
    done
    die "no block of $count free ports found in 50 tries"
}

# Port picking is one at a time on this machine: `ports_lock` before free_ports,
# `ports_unlock` once the daemons listen, so two clusters starting together (tests side by
# side, ceph.sh beside seaweedfs.sh) never pick the same block, nor one a block whose daemons
# have not bound it yet. The lock is a file naming its owner (PID and start time), read and
# written under a short flock: a flock held for the whole wait would be inherited by the
# daemons started meanwhile and held for their life. An owner that is gone (killed before
# it unlocked) leaves a stale file the next one takes over. The empty `.guard` file the
# flock is taken on stays (removing it would let two scripts flock two different files).
ports_lock_file=${IOLAB_PORTS_LOCK:-/tmp/iolab-cluster-ports.lock}
ports_locked=0
proc_start() { awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null; }
ports_lock() {
    local end=$((SECONDS + ${IOLAB_PORTS_LOCK_WAIT:-180})) me_id owner
    [ "$ports_locked" = 0 ] || return 0
    me_id="$$ $(proc_start $$)"
    while true; do
        owner=$( (
            flock -w 10 9 || { echo "? (no flock on $ports_lock_file.guard in 10 s)"; exit 0; }
            o=$(cat "$ports_lock_file" 2>/dev/null || true)
            set -- $o
            if [ -n "${1:-}" ] && [ "$o" != "$me_id" ] && [ "$(proc_start "$1")" = "${2:-}" ]; then
                echo "$1"
                exit 0
            fi
            echo "$me_id" >"$ports_lock_file"
        ) 9>>"$ports_lock_file.guard")
        if [ -z "$owner" ]; then
            ports_locked=1
            # However the script ends (a `set -e` failure, a die in a subshell), the lock
            # goes with it; a kill -9 leaves it to the next one's stale-owner check.
            trap ports_unlock EXIT
            return 0
        fi
        [ "$SECONDS" -lt "$end" ] \
            || die "waited ${IOLAB_PORTS_LOCK_WAIT:-180} s for $ports_lock_file: pid $owner ($(tr '\0' ' ' <"/proc/$owner/cmdline" 2>/dev/null | cut -c1-80)) is still starting a cluster"
        sleep 0.2
    done
}
ports_unlock() {
    # Only the script itself: a `die` in a $(...) subshell leaves its parent's lock alone.
    [ "${ports_locked:-0}" = 1 ] && [ "$BASHPID" = "$$" ] || return 0
    ports_locked=0
    (
        flock -w 10 9 || exit 0
        [ "$(cat "$ports_lock_file" 2>/dev/null)" != "$$ $(proc_start $$)" ] || rm -f "$ports_lock_file"
    ) 9>>"$ports_lock_file.guard"
}

# The state directory is ours only if it holds our marker (or is empty).
claim_state() {
    local marker=$1
    [ -e "$state" ] || { mkdir -p "$state"; touch "$state/$marker"; return 0; }
    [ -e "$state/$marker" ] || { [ -d "$state" ] && [ -z "$(ls -A "$state")" ]; } \
        || die "$state exists and was not made by $me; choose another --state"
    touch "$state/$marker"
}

# `dir`, or its nearest existing parent.
existing() {
    local d=$1
    while [ ! -e "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done
    echo "$d"
}

# The device number of the file system `dir` is (or would be) on.
fs_of() { stat -c %d "$(existing "$1")"; }

# Bytes free to an unprivileged writer (statfs's f_bavail) in the file system of `dir`.
free_bytes() { df -B1 --output=avail "$(existing "$1")" 2>/dev/null | tail -n 1 | tr -d ' '; }

human() { awk -v b="$1" 'BEGIN { if (b >= 2^30) printf "%.1f GiB", b / 2^30; else printf "%d MiB", b / 2^20 }'; }

# Refuses to start (one line, before anything is made) when `dir`'s file system has less
# than `bytes` free: a cluster on a full disk fails later and far less clearly (SeaweedFS
# finds "no free volumes", a sparse OSD image fails its writes under bluestore).
need_free() {
    local dir=$1 bytes=$2 what=$3 have
    have=$(free_bytes "$dir") || have=""
    [ -n "$have" ] || { say "could not read the free space of $dir (df)"; return 0; }
    [ "$have" -ge "$bytes" ] \
        || die "needs $(human "$bytes") free in $dir for $what, has $(human "$have") (df -h: $(df -h --output=target,size,used,avail "$(existing "$dir")" 2>/dev/null | tail -n 1 | tr -s ' '))"
}

# What a failed start had to work with, after the last lines of the given logs: free
# space where the state is, memory. A CI log shows only what is printed, and on a small or
# busy machine the cause is usually there.
explain() {
    local f d
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "--- last lines of $f" >&2
        tail -n 15 "$f" | cut -c 1-400 >&2
    done
    d=$(existing "$state")
    echo "--- df -h $d" >&2
    df -h "$d" >&2 || true
    echo "--- free -m" >&2
    free -m >&2 || true
}

# Waits `secs` (wall clock) for `cmd...` to succeed, each try bounded by the time left;
# on failure runs `on_fail` (a function) first.
wait_until() {
    local secs=$1 what=$2 on_fail=$3 end left
    shift 3
    end=$((SECONDS + secs))
    while left=$((end - SECONDS)); [ "$left" -gt 0 ]; do
        timeout "$left" "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    "$on_fail"
    die "$what not ready after $secs s"
}
