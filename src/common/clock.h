/* The clocks, read in one place. The monotonic clock measures intervals and
 * deadlines (it never jumps when the wall clock is set); the wall clock
 * stamps what outlives the process or is shown to people (object mtimes,
 * bucket creation dates, HTTP dates, deadlines stored on disk). */
#ifndef S3R_COMMON_CLOCK_H
#define S3R_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t clock_mono_ns(void);
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t clock_mono_ms(void);
/* CLOCK_REALTIME: milliseconds since the Unix epoch. */
int64_t clock_wall_ms(void);
/* The absolute time ms milliseconds from now on clock id (CLOCK_MONOTONIC or
 * CLOCK_REALTIME), for pthread_cond_timedwait on a condition variable using
 * that clock. */
struct timespec clock_after_ms(clockid_t id, uint64_t ms);

#endif
