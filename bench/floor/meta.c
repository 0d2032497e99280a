/* The metadata floor: mdtest's file phases (`mdtest -u -F -n N -C -T -r`) with nothing
 * but the calls. NP processes, each in its own directory
 * DIR/test-dir.0-0/mdtest_tree.R.0 (mdtest's unique directory per rank), make N files
 * file.mdtest.R.I by open(O_RDWR|O_CREAT, 0664) + close, stat each by its whole path,
 * then unlink each by its whole path: mdtest's system calls on mdtest's paths. Every
 * phase starts and ends at a barrier of all processes; its time runs from the first
 * barrier to the second, as mdtest's does.
 *
 * -o PHASES runs only some of the phases, in order (c create, s stat, r remove; default
 * csr): `-o s` stats a tree another tool built (iolab's, at DIR = its tree root), so both
 * tools' stat loops can be timed on one tree.
 *
 * usage: meta -d DIR [-n FILES] [-p PROCESSES] [-o PHASES] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "floor.h"

enum { CREATE, STAT, REMOVE, PHASES };
static const char *names[PHASES] = {"meta-create", "meta-stat", "meta-remove"};

struct shared {
    pthread_barrier_t gate;
    double start[PHASES], end[PHASES];
    double user[64][PHASES], sys[64][PHASES];
    int failed;
};

/* Writes i in decimal at p; returns the end. */
static char *put_number(char *p, uint64_t i) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    while (n)
        *p++ = tmp[--n];
    *p = 0;
    return p;
}

static int run_phase[PHASES];
static int create_flags = O_RDWR | O_CREAT;

static void child(struct shared *sh, const char *dir, int rank, uint64_t files) {
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/test-dir.0-0/mdtest_tree.%d.0", dir, rank);
    if (mkdir(path, 0775) != 0 && errno != EEXIST)
        floor_die(path);
    char tree[4096];
    memcpy(tree, path, (size_t)len + 1);
    len += snprintf(path + len, sizeof path - (size_t)len, "/file.mdtest.%d.", rank);
    char *tail = path + len;
    struct stat st;
    for (int ph = 0; ph < PHASES; ph++) {
        if (!run_phase[ph])
            continue;
        pthread_barrier_wait(&sh->gate);
        if (rank == 0)
            sh->start[ph] = floor_now();
        double u0, s0, u1, s1;
        floor_cpu(&u0, &s0);
        for (uint64_t i = 0; i < files; i++) {
            put_number(tail, i);
            int bad = 0;
            if (ph == CREATE) {
                int fd = open(path, create_flags, 0664);
                bad = fd < 0 || close(fd) != 0;
            } else if (ph == STAT) {
                bad = stat(path, &st) != 0;
            } else {
                bad = unlink(path) != 0;
            }
            if (bad) {
                sh->failed = 1;
                floor_die(path);
            }
        }
        floor_cpu(&u1, &s1);
        sh->user[rank][ph] = u1 - u0;
        sh->sys[rank][ph] = s1 - s0;
        pthread_barrier_wait(&sh->gate);
        if (rank == 0)
            sh->end[ph] = floor_now();
    }
    if (run_phase[REMOVE])
        rmdir(tree);
}

int main(int argc, char **argv) {
    const char *usage = "meta -d DIR [-n FILES] [-p PROCESSES] [-o PHASES: c s r]";
    const char *dir = NULL;
    const char *phases = "csr";
    uint64_t files = 30000;
    int np = 1;
    for (int c; (c = getopt(argc, argv, "d:n:p:o:x")) != -1;) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'n': files = strtoull(optarg, NULL, 0); break;
        case 'p': np = atoi(optarg); break;
        case 'o': phases = optarg; break;
        case 'x': create_flags |= O_EXCL; break;
        default: floor_usage(usage);
        }
    }
    if (!dir || np < 1 || np > 64)
        floor_usage(usage);
    for (const char *o = phases; *o; o++) {
        const char *at = strchr("csr", *o);
        if (!at)
            floor_usage(usage);
        run_phase[at - "csr"] = 1;
    }
    char top[4096];
    snprintf(top, sizeof top, "%s/test-dir.0-0", dir);
    if (mkdir(dir, 0775) != 0 && errno != EEXIST)
        floor_die(dir);
    if (mkdir(top, 0775) != 0 && errno != EEXIST)
        floor_die(top);
    struct shared *sh =
        mmap(0, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        floor_die("mmap");
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->gate, &a, (unsigned)np);
    fflush(stdout);
    for (int r = 0; r < np; r++) {
        pid_t pid = fork();
        if (pid < 0)
            floor_die("fork");
        if (pid == 0) {
            child(sh, dir, r, files);
            _exit(0);
        }
    }
    int ok = 1;
    for (int r = 0; r < np; r++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ok = 0;
    }
    if (run_phase[REMOVE])
        rmdir(top);
    if (!ok || sh->failed)
        return 2;
    for (int ph = 0; ph < PHASES; ph++) {
        if (!run_phase[ph])
            continue;
        double user = 0, sys = 0;
        for (int r = 0; r < np; r++) {
            user += sh->user[r][ph];
            sys += sh->sys[r][ph];
        }
        floor_report(names[ph], files * (uint64_t)np, sh->end[ph] - sh->start[ph], user, sys);
    }
    return 0;
}
