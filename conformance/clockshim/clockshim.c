/*
 * The conformance suite's wall-clock shim (docs/conformance.md), loaded into redis-server with
 * LD_PRELOAD. It adds an offset to every reading of the wall clock (clock_gettime with
 * CLOCK_REALTIME or CLOCK_REALTIME_COARSE, gettimeofday, time) and leaves the monotonic clocks
 * alone, as an NTP step does. The offset, in nanoseconds, is the signed 64-bit integer at the
 * start of the file named by LOCKSTEP_CLOCK_OFFSET_FILE; the file is mapped shared, so the
 * driver steps the clock by writing it. Without the variable the shim changes nothing.
 *
 * libfaketime deadlocks Debian's redis-server; this shim calls the kernel directly (no dlsym,
 * no locks, no allocation), so it cannot.
 *
 * Built by conformance/run: gcc -O2 -shared -fPIC -o clockshim.so clockshim.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns;

__attribute__((constructor)) static void clockshim_init(void) {
    const char *path = getenv("LOCKSTEP_CLOCK_OFFSET_FILE");
    if (path == NULL) {
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED) {
        offset_ns = m;
    }
}

static int64_t offset(void) {
    return offset_ns == NULL ? 0 : __atomic_load_n(offset_ns, __ATOMIC_RELAXED);
}

static void shift(struct timespec *ts) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + offset();
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    long r = syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        shift(ts);
    }
    return (int)r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) {
        return -1;
    }
    shift(&ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) {
        return (time_t)-1;
    }
    shift(&ts);
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
