#!/bin/sh
# Wall time of a 3 s null-backend run at growing rank counts, oversubscribed on this
# machine: what iolab's own coordination costs as the job grows (startup, agreement,
# progress reductions, the end-of-phase exchange). Needs mpirun and an MPI build:
#   cargo build --release --locked --features iolab/mpi
#   sh bench/scale.sh 16 64 128 256
BIN=${IOLAB:-target/release/iolab}
[ -x "$BIN" ] || BIN=target/debug/iolab
for n in "${@:-16 64}"; do
    start=$(date +%s.%N)
    mpirun --allow-run-as-root --oversubscribe -np "$n" "$BIN" run --backend null \
        --size 1GiB --runtime 3s -Q --no-store >/dev/null 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "ranks=$n exit=$rc wall_s=$(echo "$end - $start" | bc)"
done
