#!/usr/bin/env bash
# An NFS server on 127.0.0.1 for tests, benches and users who want to try iolab's NFS
# backend: Debian's NFS-Ganesha with its VFS FSAL exporting a directory over NFSv3 (with
# rpcbind) and NFSv4, in user space (this machine has no kernel NFS client or server).
#
#   scripts/nfs.sh up       [--state DIR] [--ports auto|BASE] [--wait SECS] [--env FILE]
#   scripts/nfs.sh down     [--state DIR]
#   scripts/nfs.sh status|env [--state DIR]
#   scripts/nfs.sh failover --gap SECONDS [--state DIR]
#
# `up` installs nfs-ganesha, nfs-ganesha-vfs and rpcbind with apt-get when they are missing,
# makes DIR (default /var/tmp/iolab-nfs) with the exported directory DIR/export (read-write)
# and DIR/export-ro (read-only), starts rpcbind unless one already listens on port 111, and
# ganesha.nfsd on 127.0.0.1 (NFS on 2049, MOUNT on 20048 by default; BASE and BASE+1 with
# --ports BASE, a free pair with auto). `Graceless = true`: the server serves at once, and
# again at once after a restart. It prints a shell-sourceable env file (also DIR/env):
# NFS_URL (v3, read-write), NFS_URL_V4 (v4, the pseudo path), NFS_URL_RO, NFS_EXPORT (the
# exported directory on this machine) and the ports. `up` on a running server prints it
# again. `down` stops ganesha and the rpcbind it started, by their recorded PIDs, and
# removes DIR and what the daemons made in /run (only what was not there before `up`).
# `failover --gap S` kills the serving ganesha at once (SIGKILL, as a node that dies) and
# starts another on the same exports, address and ports S seconds later (an HA pair's
# takeover, on one host); it prints when the server went and when it served again.
#
# Learned here (BENCH-NOTES.md): NFSv3 clients find MOUNT through rpcbind unless given
# `mountport=`, and ganesha registers NFS and MOUNT with rpcbind: one NFSv3 server per
# rpcbind, so servers start one at a time (the port lock of scripts/lib/cluster.sh) and `up`
# refuses (one line) when another NFS server is registered, or with --wait SECS waits up to
# SECS for it to go (tests in several processes take turns so). libnfs's v3 URLs take the real
# path of the export (nfs://127.0.0.1/DIR/export; the pseudo path gives MNT3ERR_ACCES), v4
# URLs the pseudo path and the port (nfs://127.0.0.1/export?version=4&nfsport=PORT).
# rpcbind writes /run/rpcbind/*.xdr when it stops; ganesha makes /run/ganesha.
set -euo pipefail

me=nfs.sh
cmd=${1:-}
[ $# -gt 0 ] && shift
state=${NFS_STATE:-/var/tmp/iolab-nfs}
ports=default
gap=""
wait_secs=0
env_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --state) state=${2:?--state needs a directory}; shift 2 ;;
        --ports) ports=${2:?--ports needs auto or a base port}; shift 2 ;;
        --gap) gap=${2:?--gap needs seconds}; shift 2 ;;
        --wait) wait_secs=${2:?--wait needs seconds}; shift 2 ;;
        --env) env_out=${2:?--env needs a file}; shift 2 ;;
        *) echo "$me: unknown option '$1' (see the head of $0)" >&2; exit 2 ;;
    esac
done
case "$cmd" in
    up|down|status|env|failover) ;;
    *) echo "usage: $0 up|down|status|env|failover [--state DIR] [--ports auto|BASE] [--gap SECONDS]" >&2; exit 2 ;;
esac
case "$wait_secs" in ''|*[!0-9]*) echo "$me: --wait takes whole seconds, not '$wait_secs'" >&2; exit 2 ;; esac
if [ "$cmd" = failover ]; then
    [[ "$gap" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "$me: failover needs --gap SECONDS (such as 2 or 0.5), not '$gap'" >&2; exit 2; }
fi
state=$(realpath -m "$state")
marker=.iolab-nfs
conf="$state/ganesha.conf"
run="$state/run"
# shellcheck source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"

# What the daemons make outside DIR; removed at `down` if `up` did not find it.
RUN_LEFTOVERS="/run/rpcbind /run/rpcbind.lock /run/rpcbind.sock /run/ganesha"

alive_g() { alive "$run/ganesha.pid" ganesha.nfsd; }
alive_r() { alive "$run/rpcbind.pid" rpcbind; }

start_ganesha() {
    setsid ganesha.nfsd -F -f "$conf" -L "$state/log/ganesha.log" -p "$run/ganesha.nfsd.pid" \
        </dev/null >>"$state/log/ganesha.out" 2>&1 &
    spawned $! "$run/ganesha.pid" ganesha.nfsd
}

serving() { # ganesha listens on NFS and MOUNT, and (v3) rpcbind knows it
    listening "$P_NFS" && listening "$P_MNT" && rpcinfo -p 127.0.0.1 2>/dev/null | grep -q "tcp *$P_NFS *nfs"
}

wait_serving() { # secs -> 0 once serving, 1 if ganesha exited or the time ran out
    local end=$((SECONDS + $1))
    while [ "$SECONDS" -lt "$end" ]; do
        serving && return 0
        alive_g || return 1
        sleep 0.02
    done
    return 1
}

# NFS and MOUNT entries of the rpcbind on 127.0.0.1 (a killed ganesha leaves its own).
unregister() {
    local v
    for v in 3 4; do rpcinfo -d 100003 "$v" >/dev/null 2>&1 || true; done
    for v in 1 3; do rpcinfo -d 100005 "$v" >/dev/null 2>&1 || true; done
}

stop_all() {
    stop_pid "$run/ganesha.pid" ganesha.nfsd 50
    if [ -e "$run/rpcbind.pid" ]; then
        stop_pid "$run/rpcbind.pid" rpcbind 30
    elif [ -e "$run/registered" ]; then
        unregister
    fi
    rm -f "$run/registered"
    local p
    for p in $RUN_LEFTOVERS; do
        grep -qxF "$p" "$state/run-before" 2>/dev/null || rm -rf "$p"
    done
}

write_conf() {
    cat >"$conf" <<EOF
# An NFS-Ganesha made by scripts/nfs.sh; everything it writes is under $state.
NFS_CORE_PARAM {
    Bind_addr = 127.0.0.1;
    Protocols = 3, 4;
    NFS_Port = $P_NFS;
    MNT_Port = $P_MNT;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Plugins_Dir = /usr/lib/x86_64-linux-gnu/ganesha;
}
NFS_KRB5 { Active_krb5 = false; }
NFSv4 {
    Graceless = true;
    RecoveryRoot = $state/recovery;
}
EXPORT {
    Export_Id = 1;
    Path = $state/export;
    Pseudo = /export;
    Access_Type = RW;
    Squash = No_Root_Squash;
    Protocols = 3, 4;
    FSAL { Name = VFS; }
}
EXPORT {
    Export_Id = 2;
    Path = $state/export-ro;
    Pseudo = /export-ro;
    Access_Type = RO;
    Squash = No_Root_Squash;
    Protocols = 3, 4;
    FSAL { Name = VFS; }
}
EOF
}

write_env() {
    local f="$state/env"
    {
        echo "# NFS-Ganesha from scripts/nfs.sh (state $state)"
        echo "NFS_STATE=$state"
        echo "NFS_EXPORT=$state/export"
        echo "NFS_EXPORT_RO=$state/export-ro"
        echo "NFS_URL='nfs://127.0.0.1$state/export?nfsport=$P_NFS&mountport=$P_MNT'"
        echo "NFS_URL_V4='nfs://127.0.0.1/export?version=4&nfsport=$P_NFS'"
        echo "NFS_URL_RO='nfs://127.0.0.1$state/export-ro?nfsport=$P_NFS&mountport=$P_MNT'"
        echo "NFS_PORT=$P_NFS"
        echo "NFS_MOUNT_PORT=$P_MNT"
        echo "NFS_PORTS=\"$P_NFS $P_MNT\""
    } >"$f.tmp"
    mv "$f.tmp" "$f"
}

print_env() {
    cat "$state/env"
    if [ -n "$env_out" ]; then cp "$state/env" "$env_out"; fi
}

load_ports() {
    P_NFS=$(awk -F= '$1 == "NFS_PORT" { print $2 }' "$state/env" 2>/dev/null)
    P_MNT=$(awk -F= '$1 == "NFS_MOUNT_PORT" { print $2 }' "$state/env" 2>/dev/null)
    [ -n "$P_NFS" ] && [ -n "$P_MNT" ] || die "no NFS server was made in $state (no $state/env)"
}

failed_up() {
    explain "$state/log/ganesha.out" "$state/log/ganesha.log" "$state/log/rpcbind.out"
    stop_all
}

install_nfs() {
    local missing=()
    command -v ganesha.nfsd >/dev/null 2>&1 || missing+=(nfs-ganesha)
    [ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || missing+=(nfs-ganesha-vfs)
    command -v rpcbind >/dev/null 2>&1 || missing+=(rpcbind)
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]} with apt-get"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

now() { date +%s.%N | cut -c1-14; }

case "$cmd" in
status)
    [ -e "$run/ganesha.pid" ] || { echo down; exit 3; }
    if alive_g; then echo "ganesha.nfsd: pid $(cat "$run/ganesha.pid")"; else echo "ganesha.nfsd: not running"; fi
    [ -e "$run/rpcbind.pid" ] && { alive_r && echo "rpcbind: pid $(cat "$run/rpcbind.pid")" || echo "rpcbind: not running"; }
    alive_g && exit 0
    exit 3 ;;
env)
    alive_g || die "no NFS server is running from $state"
    print_env; exit 0 ;;
failover)
    [ -e "$state/$marker" ] || die "no NFS server was made in $state"
    load_ports
    alive_g || die "no NFS server is running from $state (nothing to fail over)"
    pid=$(cat "$run/ganesha.pid")
    t_down=$(now)
    kill -KILL "$pid"
    for _ in $(seq 500); do alive_g || break; sleep 0.01; done
    alive_g && die "ganesha.nfsd (pid $pid) survived SIGKILL"
    sleep "$gap"
    t_start=$(now)
    start_ganesha
    wait_serving 30 || { failed_up; die "the new ganesha.nfsd did not serve on 127.0.0.1:$P_NFS in 30 s"; }
    t_up=$(now)
    echo "down $t_down"
    echo "started $t_start"
    echo "serving $t_up"
    awk -v a="$t_down" -v b="$t_up" 'BEGIN { printf "gap %.3f\n", b - a }'
    exit 0 ;;
down)
    [ -e "$state" ] || exit 0
    [ -e "$state/$marker" ] || die "$state was not made by $me (no $state/$marker); leaving it alone"
    used=$(grep '^NFS_PORTS=' "$state/env" 2>/dev/null | cut -d'"' -f2) || true
    stop_all
    for p in $used; do
        for _ in $(seq 50); do listening "$p" || break; sleep 0.1; done
        listening "$p" && say "port $p still has a listener after down (not one of ours?)"
    done
    [ -z "$survivors" ] || die "pid(s)$survivors still run after SIGKILL; leaving $state (run down again)"
    rm -rf "$state"
    exit 0 ;;
esac

# up
if [ -e "$state/env" ] && alive_g; then
    load_ports
    serving && { print_env; exit 0; }
fi
if [ -e "$state/$marker" ]; then
    # A half-started or crashed server: stop what is left and start afresh.
    stop_all
    [ -z "$survivors" ] || die "pid(s)$survivors of the old server still run after SIGKILL; leaving $state"
    rm -rf "$state"
fi
for t in ss rpcinfo; do command -v "$t" >/dev/null || die "needs '$t' on PATH"; done
install_nfs
# Under the port lock: returns once no NFS server is registered with rpcbind (waiting up to
# --wait seconds, the lock let go meanwhile so the other's owner can take it down), or dies
# naming its port.
registered() { rpcinfo -p 127.0.0.1 2>/dev/null | awk '$5 == "nfs" { print $4 }' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
end=$((SECONDS + wait_secs))
while true; do
    ports_lock
    other=""
    listening 111 && other=$(registered)
    [ -n "$other" ] || break
    ports_unlock
    [ "$SECONDS" -lt "$end" ] \
        || die "another NFS server is registered with the rpcbind on port 111 (port $other): one NFSv3 server per machine; stop it first (scripts/nfs.sh down --state ITS-STATE), or pass --wait SECS"
    sleep 0.5
done
rpcbind_ours=1
# Someone's rpcbind: ganesha registers with it, `down` takes the entries out again.
listening 111 && rpcbind_ours=0
case "$ports" in
    default) P_NFS=2049; P_MNT=20048 ;;
    *) base=$(free_ports "$ports" 2); P_NFS=$base; P_MNT=$((base + 1)) ;;
esac
for p in "$P_NFS" "$P_MNT"; do
    listening "$p" && die "port $p is in use; pass --ports auto or another --ports BASE"
done
claim_state "$marker"
mkdir -p "$run" "$state"/{log,recovery,export,export-ro}
for p in $RUN_LEFTOVERS; do [ -e "$p" ] && echo "$p"; done >"$state/run-before"
write_conf
if [ "$rpcbind_ours" = 0 ]; then
    touch "$run/registered"
else
    setsid rpcbind -f </dev/null >>"$state/log/rpcbind.out" 2>&1 &
    spawned $! "$run/rpcbind.pid" rpcbind
    wait_until 10 "rpcbind on port 111" failed_up rpcinfo -p 127.0.0.1
fi
start_ganesha
wait_serving 30 || { failed_up; die "ganesha.nfsd did not serve on 127.0.0.1:$P_NFS in 30 s"; }
ports_unlock
write_env
print_env
