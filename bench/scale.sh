#!/bin/sh
# Wall time of a 3 s null-backend `run` and of a null-backend `meta` at growing rank
# counts, oversubscribed on this machine: what iolab's own coordination costs as the job
# grows (startup, agreement, progress reductions, the end-of-phase exchange), and the
# peak memory of rank 0 (which receives every rank's outcome) against rank 1's: their
# difference over the number of ranks is what rank 0 holds per rank. Needs mpirun,
# /usr/bin/time and an MPI build:
#   cargo build --release --locked -p iolab --features mpi
#   sh bench/scale.sh 16 64 128 256
BIN=${IOLAB:-target/release/iolab}
[ -x "$BIN" ] || BIN=target/debug/iolab
OUT=$(mktemp -d)
# Each rank writes its own peak RSS (KiB) to $OUT/rss.<rank>.
WRAP='exec /usr/bin/time -f %M -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"'
measure() {
    kind=$1
    n=$2
    shift 2
    rm -f "$OUT"/rss.*
    start=$(date +%s.%N)
    mpirun --allow-run-as-root --oversubscribe -np "$n" sh -c "$WRAP" "$OUT" "$BIN" "$@" \
        >/dev/null 2>&1
    rc=$?
    end=$(date +%s.%N)
    rss0=$(cat "$OUT/rss.0" 2>/dev/null || echo 0)
    rss1=$(cat "$OUT/rss.1" 2>/dev/null || echo 0)
    per_rank=$(echo "($rss0 - $rss1) / $n" | bc -l)
    printf '%s ranks=%s exit=%s wall_s=%.1f rank0_rss_kib=%s rank1_rss_kib=%s rank0_extra_per_rank_kib=%.1f\n' \
        "$kind" "$n" "$rc" "$(echo "$end - $start" | bc)" "$rss0" "$rss1" "$per_rank"
}
for n in "${@:-16 64}"; do
    measure run "$n" run --backend null --size 1GiB --runtime 3s -Q --no-store
    measure meta "$n" meta --backend null --files-per-dir 1000 -Q --no-store
done
rm -rf "$OUT"
