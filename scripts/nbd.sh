#!/usr/bin/env bash
# A network block device in user space for tests, benches and users who want to try iolab
# on one: nbdkit serving a memory-backed export over a Unix socket, optionally slowed by
# its `delay` filter and failing I/O at a rate with its `error` filter. This machine loads
# no kernel modules (no nbd, no NVMe-oF initiator): iolab reaches the export through libnbd
# (`iolab run --backend nbd --nbd-uri URI`), as fio's `nbd` ioengine does.
#
#   scripts/nbd.sh up   [--state DIR] [--size SIZE] [--delay-read TIME] [--delay-write TIME]
#                       [--error-rate PERCENT] [--error-on read|write|all] [--error ERRNO]
#                       [--env FILE]
#   scripts/nbd.sh down|status|env [--state DIR]
#
# `up` starts nbdkit in DIR (default /var/tmp/iolab-nbd; one DIR per export, so several run
# at once), waits until its socket DIR/nbd.sock answers, then prints a shell-sourceable env
# file (also DIR/env): NBD_URI (nbd+unix:///?socket=DIR/nbd.sock), NBD_SOCKET, NBD_SIZE
# (bytes) and NBD_PID. `up` on a running export prints it again and changes nothing (a
# different --size or filter needs `down` first). `down` stops nbdkit by its recorded PID
# (SIGTERM, then SIGKILL), and removes DIR: the export's data is gone with it.
#
# --size: the memory plugin's size (64M by default; sparse, memory is taken as data is
# written). --delay-read/--delay-write: the delay filter's rdelay/wdelay (5ms, 1s). 
# --error-rate: the error filter's rate (1%, 0.5%) on the operations --error-on names (all
# by default: reads, writes, trims, zeroes; `write` leaves reads alone, so that a guard's
# probe and a layout read succeed), failing each with --error (EIO by default).
set -euo pipefail

me=nbd.sh
cmd=${1:-}
[ $# -gt 0 ] && shift
state=${NBD_STATE:-/var/tmp/iolab-nbd}
size=64M
delay_read=""
delay_write=""
error_rate=""
error_on=all
error_errno=EIO
env_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --size) size=${2:?--size needs a size such as 64M}; shift 2 ;;
        --delay-read) delay_read=${2:?--delay-read needs a time such as 5ms}; shift 2 ;;
        --delay-write) delay_write=${2:?--delay-write needs a time such as 5ms}; shift 2 ;;
        --error-rate) error_rate=${2:?--error-rate needs a percentage such as 1%}; shift 2 ;;
        --error-on) error_on=${2:?--error-on needs read, write or all}; shift 2 ;;
        --error) error_errno=${2:?--error needs an errno name such as EIO}; shift 2 ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        *) echo "$me: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env) ;;
    *) echo "usage: $0 up|down|status|env [--state DIR] [--size SIZE] [--delay-read T] [--delay-write T] [--error-rate PCT] ..." >&2; exit 2 ;;
esac
case "$error_on" in read|write|all) ;; *) echo "$me: --error-on takes read, write or all, not '$error_on'" >&2; exit 2 ;; esac
for t in "$delay_read" "$delay_write"; do
    case "$t" in ''|[0-9]*s) ;; *) echo "$me: a delay is a time such as 5ms or 1s, not '$t'" >&2; exit 2 ;; esac
done
case "$error_rate" in ''|[0-9]*%|[0-9]*) ;; *) echo "$me: --error-rate takes a percentage such as 1%, not '$error_rate'" >&2; exit 2 ;; esac
state=$(realpath -m "$state")
marker=.iolab-nbd
sock="$state/nbd.sock"
pidf="$state/nbdkit.pid"
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"

alive_nbd() { alive "$pidf" nbdkit; }

# Whether the export answers: a connection to its socket is accepted.
answers() { python3 - "$sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
# The NBD server's greeting starts with "NBDMAGIC".
sys.exit(0 if s.recv(8) == b"NBDMAGIC" else 1)
EOF
}

write_env() {
    local f="$state/env"
    {
        echo "# nbdkit from scripts/nbd.sh (state $state)"
        echo "NBD_STATE=$state"
        echo "NBD_URI=nbd+unix:///?socket=$sock"
        echo "NBD_SOCKET=$sock"
        echo "NBD_SIZE=$bytes"
        echo "NBD_PID=$(cat "$pidf")"
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

failed_up() {
    explain "$state/nbdkit.log"
    stop_pid "$pidf" nbdkit 30
}

case "$cmd" in
status)
    [ -e "$pidf" ] || { echo down; exit 3; }
    if alive_nbd; then echo "nbdkit: pid $(cat "$pidf") serving $sock"; exit 0; fi
    echo "nbdkit: not running"; exit 3 ;;
env)
    alive_nbd || die "no nbdkit is running from $state"
    print_env; exit 0 ;;
down)
    [ -e "$state" ] || exit 0
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    stop_pid "$pidf" nbdkit 30
    [ -z "$survivors" ] || die "pid(s)$survivors still run after SIGKILL; leaving $state (run down again)"
    rm -rf "$state"
    exit 0 ;;
esac

# up
if [ -e "$state/env" ] && alive_nbd && answers 2>/dev/null; then
    print_env; exit 0
fi
if [ -e "$state/$marker" ]; then
    # A half-started or crashed export: stop what is left and start afresh.
    stop_pid "$pidf" nbdkit 30
    [ -z "$survivors" ] || die "pid(s)$survivors of the old nbdkit still run after SIGKILL; leaving $state"
    rm -rf "$state"
fi
bytes=$(numfmt --from=iec "${size%B}" 2>/dev/null) \
    || { echo "$me: --size takes a size such as 64M or 1G, not '$size'" >&2; exit 2; }
command -v nbdkit >/dev/null || die "needs nbdkit (apt-get install nbdkit)"
command -v python3 >/dev/null || die "needs python3 (to see the socket answer)"
# A Unix socket's path is at most 107 bytes.
[ "${#sock}" -le 107 ] || die "the socket path $sock is longer than a Unix socket allows (107 bytes); choose a shorter --state"
claim_state "$marker"
filters=()
params=()
if [ -n "$error_rate" ]; then
    filters+=(--filter=error)
    case "$error_on" in
        all) params+=("error-rate=${error_rate%\%}%") ;;
        read) params+=("error-pread-rate=${error_rate%\%}%") ;;
        write) params+=("error-pwrite-rate=${error_rate%\%}%") ;;
    esac
    params+=("error=$error_errno")
fi
if [ -n "$delay_read$delay_write" ]; then
    filters+=(--filter=delay)
    [ -z "$delay_read" ] || params+=("rdelay=$delay_read")
    [ -z "$delay_write" ] || params+=("wdelay=$delay_write")
fi
# nbdkit makes itself a daemon once its socket is bound and writes its own PID to the PID
# file then (its foreground mode, -f, ends with the shell that started it). Its parent
# returns then; what it says until then (a bad option, a socket it cannot bind) goes to
# DIR/nbdkit.log (the daemon itself writes nothing there).
nbdkit -U "$sock" -P "$pidf" --log=stderr "${filters[@]}" memory "size=$bytes" "${params[@]}" \
    </dev/null >>"$state/nbdkit.log" 2>&1 \
    || { failed_up; die "nbdkit failed to start (log: $state/nbdkit.log)"; }
for _ in $(seq 100); do
    [ -S "$sock" ] && alive_nbd && answers 2>/dev/null && break
    sleep 0.1
done
alive_nbd || { failed_up; die "nbdkit exited (log: $state/nbdkit.log)"; }
answers 2>/dev/null || { failed_up; die "nbdkit did not answer on $sock in 10 s"; }
write_env
print_env
