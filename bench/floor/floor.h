/* What every floor loop shares: a stop flag raised by SIGALRM (the loops read one
 * variable per operation and no clock), a cheap random block number, the process's CPU
 * time, and the one JSON line each floor prints at the end. No measurement beyond a
 * counter per thread and the clock read at the start and at the end. */
#ifndef FLOOR_H
#define FLOOR_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t floor_stop;

static inline void floor_on_alarm(int sig) {
    (void)sig;
    floor_stop = 1;
}

/* Raises floor_stop after `seconds` (a real-time timer: no clock read in the loop). */
static inline void floor_arm(double seconds) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = floor_on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval t;
    memset(&t, 0, sizeof t);
    t.it_value.tv_sec = (time_t)seconds;
    t.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
    setitimer(ITIMER_REAL, &t, NULL);
}

static inline double floor_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User and system CPU seconds of the whole process so far. */
static inline void floor_cpu(double *user, double *sys) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    *user = (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6;
    *sys = (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec * 1e-6;
}

/* xorshift64*, and Lemire's multiply-shift for a number below n (no division). */
static inline uint64_t floor_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t floor_below(uint64_t *s, uint64_t n) {
    return (uint64_t)(((unsigned __int128)floor_rand(s) * n) >> 64);
}

static inline void floor_die(const char *what) {
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(2);
}

static inline void floor_usage(const char *usage) {
    fprintf(stderr, "usage: %s\n", usage);
    exit(2);
}

/* The one line a floor prints: operations, seconds between the two clock reads, and the
 * process's user and system CPU seconds over the same span. */
static inline void floor_report(const char *kind, uint64_t ops, double secs, double user, double sys) {
    printf("{\"floor\":\"%s\",\"ops\":%llu,\"secs\":%.6f,\"user\":%.6f,\"sys\":%.6f}\n", kind,
           (unsigned long long)ops, secs, user, sys);
}

#endif
