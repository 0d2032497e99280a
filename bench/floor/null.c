/* The null floor: what the null backend's loop must do with no measurement. Q slots;
 * each I/O draws a random block of a FILE_SIZE-byte file in B-byte blocks, is queued as a
 * request (slot, offset, length), completes at once with its length as the result, and
 * is reaped: the result checked, the slot freed, the I/O counted. The offsets are folded
 * into a checksum the program prints, so the compiler keeps the work.
 *
 * usage: null [-q DEPTH] [-b BYTES] [-S FILE_SIZE] [-s SECONDS] */
#include "floor.h"

struct request {
    uint32_t slot, len;
    uint64_t offset;
};

struct completion {
    uint32_t slot;
    int32_t result;
};

int main(int argc, char **argv) {
    const char *usage = "null [-q DEPTH] [-b BYTES] [-S FILE_SIZE] [-s SECONDS]";
    unsigned depth = 1;
    uint64_t bs = 4096, size = 1ULL << 30;
    double secs = 4;
    for (int c; (c = getopt(argc, argv, "q:b:S:s:")) != -1;) {
        switch (c) {
        case 'q': depth = (unsigned)atoi(optarg); break;
        case 'b': bs = strtoull(optarg, NULL, 0); break;
        case 'S': size = strtoull(optarg, NULL, 0); break;
        case 's': secs = atof(optarg); break;
        default: floor_usage(usage);
        }
    }
    if (depth < 1 || bs == 0 || size < bs)
        floor_usage(usage);
    uint64_t blocks = size / bs;
    unsigned *free_slots = calloc(depth, sizeof *free_slots);
    struct completion *done = calloc(depth, sizeof *done);
    unsigned nfree = depth, ndone = 0;
    for (unsigned i = 0; i < depth; i++)
        free_slots[i] = depth - 1 - i;
    uint64_t seed = 0x9E3779B97F4A7C15ULL, ops = 0, bytes = 0, sum = 0;
    double u0, s0, u1, s1;
    floor_cpu(&u0, &s0);
    double t0 = floor_now();
    floor_arm(secs);
    while (!floor_stop) {
        while (nfree) {
            struct request r = {.slot = free_slots[--nfree], .len = (uint32_t)bs,
                                .offset = floor_below(&seed, blocks) * bs};
            sum ^= r.offset;
            done[ndone++] = (struct completion){.slot = r.slot, .result = (int32_t)r.len};
        }
        for (unsigned i = 0; i < ndone; i++) {
            if (done[i].result == (int32_t)bs) {
                ops++;
                bytes += bs;
            }
            free_slots[nfree++] = done[i].slot;
        }
        ndone = 0;
    }
    double t1 = floor_now();
    floor_cpu(&u1, &s1);
    fprintf(stderr, "null floor: checksum %llx, %llu bytes\n", (unsigned long long)sum,
            (unsigned long long)bytes);
    floor_report("null", ops, t1 - t0, u1 - u0, s1 - s0);
    return 0;
}
