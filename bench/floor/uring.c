/* The io_uring floor: one thread keeps Q reads (or writes) of B bytes in flight at random
 * block-aligned offsets of FILE, set up the way fio's io_uring engine sets up its ring
 * (engines/io_uring.c): raw system calls, IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN |
 * COOP_TASKRUN | CQSIZE (dropped one by one if the kernel refuses them), a registered
 * ring fd, a registered file (IOSQE_FIXED_FILE), registered buffers (READ_FIXED /
 * WRITE_FIXED), one SQE per slot prepared once so an I/O only sets its offset, and the
 * completion ring reaped in one pass with no system call while it holds completions.
 *
 * Submission: -B 1 (the default) hands each I/O to the kernel as it is queued, one
 * io_uring_enter per I/O as fio's default iodepth_batch_submit=1 and iolab's default
 * --submit-batch 1 do; -B N gathers N first (-B Q: the whole queue in one call). When
 * the queue is full it waits for one completion and reaps all that are ready, as fio's
 * default iodepth_batch_complete_min=1 does.
 *
 * usage: uring -f FILE [-q DEPTH] [-B BATCH] [-b BYTES] [-s SECONDS] [-w] [-d] [-G] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "floor.h"

#ifndef IORING_ENTER_NO_IOWAIT
#define IORING_ENTER_NO_IOWAIT (1U << 7)
#endif
#ifndef IORING_FEAT_NO_IOWAIT
#define IORING_FEAT_NO_IOWAIT (1U << 17)
#endif

static int ring_fd, enter_fd;
static unsigned enter_flags = IORING_ENTER_GETEVENTS;

/* Submits `submit` SQEs and waits for `wait` completions. Only a call that waits carries
 * GETEVENTS (which runs the deferred completion work) unless -G asks for it on every call
 * as fio's commit does: measured here, a submission without it is cheaper (fewer passes
 * over the deferred work), so the floor leaves it out, as iolab does. */
static int getevents_always;

static int enter(unsigned submit, unsigned wait) {
    unsigned flags = enter_flags;
    if (wait == 0 && !getevents_always)
        flags &= ~IORING_ENTER_GETEVENTS;
    for (;;) {
        long r = syscall(__NR_io_uring_enter, enter_fd, submit, wait, flags, NULL, 0);
        if (r >= 0)
            return (int)r;
        if (errno != EINTR && errno != EAGAIN)
            floor_die("io_uring_enter");
    }
}

int main(int argc, char **argv) {
    const char *usage = "uring -f FILE [-q DEPTH] [-B BATCH] [-b BYTES] [-s SECONDS] [-w] [-d] [-G]";
    const char *path = NULL;
    unsigned depth = 32, batch = 1;
    int write = 0, direct = 0;
    uint64_t bs = 4096;
    double secs = 4;
    for (int c; (c = getopt(argc, argv, "f:q:B:b:s:wdG")) != -1;) {
        switch (c) {
        case 'f': path = optarg; break;
        case 'q': depth = (unsigned)atoi(optarg); break;
        case 'B': batch = (unsigned)atoi(optarg); break;
        case 'b': bs = strtoull(optarg, NULL, 0); break;
        case 's': secs = atof(optarg); break;
        case 'w': write = 1; break;
        case 'd': direct = 1; break;
        case 'G': getevents_always = 1; break;
        default: floor_usage(usage);
        }
    }
    if (!path || depth < 1 || batch < 1 || bs == 0)
        floor_usage(usage);
    if (batch > depth)
        batch = depth;
    int fd = open(path, (write ? O_RDWR : O_RDONLY) | (direct ? O_DIRECT : 0));
    if (fd < 0)
        floor_die(path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        floor_die("fstat");
    uint64_t blocks = (uint64_t)st.st_size / bs;
    if (blocks == 0) {
        fprintf(stderr, "floor: %s holds less than one block\n", path);
        return 2;
    }

    /* fio_ioring_queue_init: the same flags, dropped in the same order on EINVAL. */
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
              IORING_SETUP_DEFER_TASKRUN;
    p.cq_entries = depth;
    for (;;) {
        ring_fd = (int)syscall(__NR_io_uring_setup, depth, &p);
        if (ring_fd >= 0)
            break;
        if (errno == EINVAL && (p.flags & IORING_SETUP_DEFER_TASKRUN))
            p.flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
        else if (errno == EINVAL && (p.flags & IORING_SETUP_COOP_TASKRUN))
            p.flags &= ~IORING_SETUP_COOP_TASKRUN;
        else if (errno == EINVAL && (p.flags & IORING_SETUP_CQSIZE))
            p.flags &= ~IORING_SETUP_CQSIZE;
        else
            floor_die("io_uring_setup");
    }
    if (p.features & IORING_FEAT_NO_IOWAIT)
        enter_flags |= IORING_ENTER_NO_IOWAIT;
    enter_fd = ring_fd;
    struct io_uring_rsrc_update reg = {.offset = (__u32)-1, .data = (__u64)ring_fd};
    if (syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_RING_FDS, &reg, 1) == 1) {
        enter_fd = (int)reg.offset;
        enter_flags |= IORING_ENTER_REGISTERED_RING;
    }

    char **bufs = calloc(depth, sizeof *bufs);
    struct iovec *iov = calloc(depth, sizeof *iov);
    for (unsigned i = 0; i < depth; i++) {
        if (posix_memalign((void **)&bufs[i], 4096, bs) != 0)
            floor_die("posix_memalign");
        memset(bufs[i], 0x5a, bs);
        iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = bs};
    }
    if (syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_BUFFERS, iov, depth) != 0)
        floor_die("IORING_REGISTER_BUFFERS (raise ulimit -l?)");
    if (syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_FILES, &fd, 1) != 0)
        floor_die("IORING_REGISTER_FILES");

    /* The rings (fio_ioring_mmap). */
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(__u32);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if ((p.features & IORING_FEAT_SINGLE_MMAP) && cq_len > sq_len)
        sq_len = cq_len;
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd,
                    IORING_OFF_SQ_RING);
    char *cq = (p.features & IORING_FEAT_SINGLE_MMAP)
                   ? sq
                   : mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd,
                          IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe),
                                     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd,
                                     IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
        floor_die("mmap");
    unsigned *sq_tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned sq_mask = *(unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *sq_array = (unsigned *)(sq + p.sq_off.array);
    unsigned *cq_head = (unsigned *)(cq + p.cq_off.head);
    unsigned *cq_tail = (unsigned *)(cq + p.cq_off.tail);
    unsigned cq_mask = *(unsigned *)(cq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

    /* One SQE per slot, prepared once (fio_ioring_prep with registerfiles, fixedbufs). */
    for (unsigned i = 0; i < depth; i++) {
        struct io_uring_sqe *e = &sqes[i];
        memset(e, 0, sizeof *e);
        e->opcode = write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
        e->flags = IOSQE_FIXED_FILE;
        e->fd = 0;
        e->addr = (unsigned long)bufs[i];
        e->len = (unsigned)bs;
        e->buf_index = (__u16)i;
        e->user_data = i;
    }
    unsigned *free_slots = calloc(depth, sizeof *free_slots);
    unsigned nfree = depth;
    for (unsigned i = 0; i < depth; i++)
        free_slots[i] = depth - 1 - i;

    uint64_t seed = 0x9E3779B97F4A7C15ULL, ops = 0;
    unsigned tail = *sq_tail, queued = 0;
    double u0, s0, u1, s1;
    floor_cpu(&u0, &s0);
    double t0 = floor_now();
    floor_arm(secs);
    while (!floor_stop) {
        /* Fill the queue; hand over every BATCH. */
        while (nfree) {
            unsigned slot = free_slots[--nfree];
            sqes[slot].off = floor_below(&seed, blocks) * bs;
            sq_array[tail & sq_mask] = slot;
            tail++;
            atomic_store_explicit((_Atomic unsigned *)sq_tail, tail, memory_order_release);
            if (++queued == batch) {
                enter(queued, 0);
                queued = 0;
            }
        }
        /* Reap what is ready; wait for one completion (submitting the rest) if none is. */
        unsigned head = *cq_head;
        unsigned ready =
            atomic_load_explicit((_Atomic unsigned *)cq_tail, memory_order_acquire) - head;
        if (ready == 0 || queued) {
            enter(queued, 1);
            queued = 0;
            ready = atomic_load_explicit((_Atomic unsigned *)cq_tail, memory_order_acquire) - head;
        }
        for (unsigned i = 0; i < ready; i++) {
            struct io_uring_cqe *c = &cqes[(head + i) & cq_mask];
            if (c->res != (int)bs) {
                errno = c->res < 0 ? -c->res : EIO;
                floor_die(write ? "write" : "read");
            }
            free_slots[nfree++] = (unsigned)c->user_data;
        }
        ops += ready;
        atomic_store_explicit((_Atomic unsigned *)cq_head, head + ready, memory_order_release);
    }
    double t1 = floor_now();
    floor_cpu(&u1, &s1);
    floor_report(write ? "uring-write" : "uring-read", ops, t1 - t0, u1 - u0, s1 - s0);
    return 0;
}
