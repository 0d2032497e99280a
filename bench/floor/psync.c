/* The psync floor: T threads, each making pread (or pwrite) calls of B bytes at random
 * block-aligned offsets of its own 1/T of FILE until the timer fires. What fio's psync
 * engine and `iolab run --backend psync` call per I/O, with nothing around it but a
 * random number and a counter.
 *
 * Each thread gives itself a private descriptor table (unshare(CLONE_FILES)), as iolab's
 * data workers do and as separate processes (fio's jobs, MPI ranks) have: in a table
 * shared between threads every pread/pwrite takes and drops a reference to the open
 * file. -S keeps the one shared table.
 *
 * -D (writes) writes iolab's default data instead of one fixed buffer, made per write as
 * iolab's data_gen.rs makes it: every 512-byte unit `id` (a counter per thread, the
 * thread's index in the high bits) is block id % 128 of a 64 KiB base of random words
 * XOR fmix64(id ^ golden) in every 8-byte word.
 *
 * usage: psync -f FILE [-t THREADS] [-b BYTES] [-s SECONDS] [-w] [-d] [-S] [-D] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>

#include "floor.h"

struct worker {
    int fd;
    int write;
    int shared_table;
    uint64_t first_block, blocks, bs;
    int data;
    uint64_t id;
    uint64_t *base;
    char *buf;
    uint64_t ops;
    pthread_barrier_t *gate;
    char pad[64];
};

#define UNIT 512
#define BASE_BYTES (64 << 10)
#define BASE_UNITS (BASE_BYTES / UNIT)

/* iolab's data_gen.rs key: MurmurHash3's 64-bit finalizer of the id. */
static inline uint64_t key_of(uint64_t id) {
    uint64_t x = id ^ 0x9E3779B97F4A7C15ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* iolab's fill_unique for whole units: unit id = base block XOR key, word by word. */
static inline void fill_unique(char *buf, uint64_t len, const uint64_t *base, uint64_t id) {
    for (uint64_t at = 0; at + UNIT <= len; at += UNIT, id++) {
        uint64_t k = key_of(id);
        const uint64_t *b = base + (id % BASE_UNITS) * (UNIT / 8);
        uint64_t *w = (uint64_t *)(buf + at);
        for (int i = 0; i < UNIT / 8; i++)
            w[i] = b[i] ^ k;
    }
}

static void *run(void *arg) {
    struct worker *w = arg;
    uint64_t seed = 0x9E3779B97F4A7C15ULL ^ (w->first_block + 1);
    uint64_t ops = 0;
    if (!w->shared_table && unshare(CLONE_FILES) != 0)
        floor_die("unshare");
    pthread_barrier_wait(w->gate);
    while (!floor_stop) {
        off_t off = (off_t)((w->first_block + floor_below(&seed, w->blocks)) * w->bs);
        char *buf = w->buf;
        if (w->data) {
            fill_unique(buf, w->bs, w->base, w->id);
            w->id += (w->bs + UNIT - 1) / UNIT;
        }
        ssize_t n = w->write ? pwrite(w->fd, buf, w->bs, off) : pread(w->fd, buf, w->bs, off);
        if (n != (ssize_t)w->bs) {
            if (n < 0 && errno == EINTR)
                continue;
            floor_die(w->write ? "pwrite" : "pread");
        }
        ops++;
    }
    w->ops = ops;
    return NULL;
}

int main(int argc, char **argv) {
    const char *usage = "psync -f FILE [-t THREADS] [-b BYTES] [-s SECONDS] [-w] [-d] [-S] [-D]";
    const char *path = NULL;
    int threads = 1, write = 0, direct = 0, shared_table = 0;
    uint64_t bs = 4096;
    int data = 0;
    double secs = 4;
    for (int c; (c = getopt(argc, argv, "f:t:b:s:wdSD")) != -1;) {
        switch (c) {
        case 'f': path = optarg; break;
        case 't': threads = atoi(optarg); break;
        case 'b': bs = strtoull(optarg, NULL, 0); break;
        case 's': secs = atof(optarg); break;
        case 'w': write = 1; break;
        case 'd': direct = 1; break;
        case 'S': shared_table = 1; break;
        case 'D': data = 1; break;
        default: floor_usage(usage);
        }
    }
    if (!path || threads < 1 || bs == 0 || (data && (!write || bs % UNIT != 0)))
        floor_usage(usage);
    int fd = open(path, (write ? O_RDWR : O_RDONLY) | (direct ? O_DIRECT : 0));
    if (fd < 0)
        floor_die(path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        floor_die("fstat");
    uint64_t per = (uint64_t)st.st_size / bs / (uint64_t)threads;
    if (per == 0) {
        fprintf(stderr, "floor: %s holds less than one block per thread\n", path);
        return 2;
    }
    pthread_barrier_t gate;
    pthread_barrier_init(&gate, NULL, (unsigned)threads + 1);
    /* Workers block SIGALRM (they inherit the mask), so the timer interrupts only the
     * main thread and never a worker's system call. */
    sigset_t alarm, old;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm, &old);
    struct worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    for (int i = 0; i < threads; i++) {
        ws[i] = (struct worker){.fd = fd, .write = write, .shared_table = shared_table,
                                .first_block = (uint64_t)i * per,
                                .blocks = per, .bs = bs, .data = data,
                                .id = (uint64_t)i << 40, .gate = &gate};
        if (posix_memalign((void **)&ws[i].buf, 4096, bs) != 0 ||
            posix_memalign((void **)&ws[i].base, 4096, BASE_BYTES) != 0)
            floor_die("posix_memalign");
        memset(ws[i].buf, 0x5a + i, bs);
        uint64_t r = 0xDA7A + (uint64_t)i;
        for (uint64_t at = 0; at < BASE_BYTES / 8; at++)
            ws[i].base[at] = floor_rand(&r);
        pthread_create(&tid[i], NULL, run, &ws[i]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    double u0, s0, u1, s1;
    floor_cpu(&u0, &s0);
    double t0 = floor_now();
    floor_arm(secs);
    pthread_barrier_wait(&gate);
    uint64_t ops = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        ops += ws[i].ops;
    }
    double t1 = floor_now();
    floor_cpu(&u1, &s1);
    floor_report(write ? "psync-write" : "psync-read", ops, t1 - t0, u1 - u0, s1 - s0);
    return 0;
}
