#!/usr/bin/env bash
# iolab meta against mdtest on the same metadata workload, side by side.
#
# For each file system (ext4: a directory under /tmp; tmpfs: one mounted for the run) and
# each thread count, runs mdtest (one MPI rank per thread, -u -F: a private directory per
# rank, files only) and iolab meta (threads in one process, a private directory per
# thread) back to back, alternating which goes first, REPEAT times, and prints the median
# create/stat/read/remove rates of each and the iolab/mdtest ratio.
#
# Cache state (BENCH-NOTES pitfall 4): before every run on ext4 the script syncs, drops
# all caches (root) and waits SETTLE seconds, because ext4 without a journal skips
# recently deleted inodes and create rates collapse in back-to-back runs otherwise (use
# --settle 65 for steady ext4 create figures: inodes deleted less than 60 s ago are
# skipped). tmpfs runs start from a freshly emptied tmpfs.
#
# Usage: bench/meta.sh [--fs "ext4 tmpfs"] [--ext4 DIR] [--tmpfs DIR] [--files N]
#                      [--threads "1 2"] [--repeat N] [--size BYTES] [--settle SECONDS]
# Needs: a release build of iolab (built if missing; IOLAB= to choose one); mdtest and
# mpirun on PATH for the comparison (mdtest is not a Debian package: build IOR/mdtest
# from https://github.com/hpc/ior; without it only iolab's figures are printed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
IOLAB=${IOLAB:-$TARGET/release/iolab}
EXT4=/tmp/iolab-meta-bench
TMPFS=/tmp/iolab-meta-tmpfs
FILES=100000
THREADS="1 2"
REPEAT=3
SIZE=0
SETTLE=3
FILESYSTEMS="ext4 tmpfs"

while [ $# -gt 0 ]; do
  case "$1" in
    --fs) FILESYSTEMS=$2; shift 2 ;;
    --ext4) EXT4=$2; shift 2 ;;
    --tmpfs) TMPFS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "meta.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

OPS="create stat read remove"
WORK=$(mktemp -d)
MOUNTED=""
cleanup() {
  [ -n "$MOUNTED" ] && umount "$MOUNTED" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ ! -x "$IOLAB" ]; then
  echo "building iolab (release) ..." >&2
  (cd "$ROOT" && cargo build --release -p iolab >&2)
fi

MDTEST=$(command -v mdtest || true)
MPIRUN=$(command -v mpirun || true)
if [ -z "$MDTEST" ] || [ -z "$MPIRUN" ]; then
  echo "mdtest or mpirun is not on PATH: skipping the comparison, printing iolab's figures only" >&2
  echo "(build mdtest from https://github.com/hpc/ior and put it on PATH to compare)" >&2
  MDTEST=""
fi
MPI_ROOT=""
[ "$(id -u)" = 0 ] && MPI_ROOT="--allow-run-as-root"

# Where each file system is, and how to reset its state before a run.
fs_dir() {
  case "$1" in
    ext4) echo "$EXT4" ;;
    tmpfs) echo "$TMPFS" ;;
  esac
}

setup_fs() {
  case " $FILESYSTEMS " in *" ext4 "*) mkdir -p "$EXT4" ;; esac
  case " $FILESYSTEMS " in *" tmpfs "*) ;; *) return 0 ;; esac
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$TMPFS"
    if ! mountpoint -q "$TMPFS"; then
      mount -t tmpfs -o size=2g tmpfs "$TMPFS"
      MOUNTED=$TMPFS
    fi
  elif ! mountpoint -q "$TMPFS" 2>/dev/null; then
    echo "not root: cannot mount a tmpfs at $TMPFS; tmpfs runs use it only if mounted" >&2
  fi
}

settle() {
  sync
  if [ "$1" = ext4 ]; then
    if ! echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
      echo "cannot drop caches (not root): ext4 create rates may collapse between runs" >&2
    fi
    sleep "$SETTLE"
  fi
}

# Prints "create stat read remove" rates (ops/s) of one mdtest run.
run_mdtest() {
  local dir=$1 threads=$2
  rm -rf "$dir/mdtest"
  "$MPIRUN" $MPI_ROOT --oversubscribe -np "$threads" "$MDTEST" -n "$FILES" -u -F \
    -w "$SIZE" -e "$SIZE" -d "$dir/mdtest" 2>/dev/null |
    awk '/File creation/ {c=$3} /File stat/ {s=$3} /File read/ {r=$3} /File removal/ {d=$3}
         END {print c, s, r, d}'
  rm -rf "$dir/mdtest"
}

# Prints the same rates of one iolab run.
run_iolab() {
  local dir=$1 threads=$2 out=$WORK/iolab.json
  "$IOLAB" meta --dir "$dir" --threads "$threads" --files-per-dir "$FILES" \
    --file-size "$SIZE" --no-store --quiet --json "$out"
  jq -r '[.phases[] | .ops[0].iops] | map(tostring) | join(" ")' "$out"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

setup_fs
echo "iolab meta vs mdtest: $FILES files per thread in one directory each, ${SIZE}-byte files, median of $REPEAT"
echo "iolab: $IOLAB"
[ -n "$MDTEST" ] && echo "mdtest: $MDTEST"
echo "cache: ext4 runs start after sync, drop_caches and ${SETTLE}s; tmpfs runs after sync"
printf '%-6s %-3s %-7s %14s %14s %8s\n' fs thr op "mdtest/s" "iolab/s" ratio
for fs in $FILESYSTEMS; do
  dir=$(fs_dir "$fs")
  [ -d "$dir" ] || continue
  [ "$fs" = tmpfs ] && ! mountpoint -q "$dir" && continue
  for t in $THREADS; do
    : > "$WORK/md" ; : > "$WORK/io"
    for rep in $(seq 1 "$REPEAT"); do
      order="mdtest iolab"
      [ $((rep % 2)) = 0 ] && order="iolab mdtest"
      for tool in $order; do
        if [ "$tool" = mdtest ]; then
          [ -n "$MDTEST" ] || continue
          settle "$fs"; run_mdtest "$dir" "$t" >> "$WORK/md"
        else
          settle "$fs"; run_iolab "$dir" "$t" >> "$WORK/io"
        fi
      done
    done
    i=1
    for op in $OPS; do
      io=$(awk -v i=$i '{print $i}' "$WORK/io" | median)
      if [ -s "$WORK/md" ]; then
        md=$(awk -v i=$i '{print $i}' "$WORK/md" | median)
        ratio=$(awk -v a="$io" -v b="$md" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
      else
        md="-"; ratio="-"
      fi
      printf '%-6s %-3s %-7s %14.0f %14.0f %8s\n' "$fs" "$t" "$op" "${md/-/0}" "$io" "$ratio"
      i=$((i + 1))
    done
  done
done
