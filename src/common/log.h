/* Logging for the server and tools: one line per message to stderr, with a
 * level and a timestamp. Messages below the current level cost one branch.
 * Every message is escaped after formatting (see log_escape), so client text
 * passed as an argument can never end a line or start one of its own. */
#ifndef S3R_COMMON_LOG_H
#define S3R_COMMON_LOG_H

#include <stddef.h>

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern int log_current_level;

/* The levels' names, indexed by enum log_level ("error" .. "debug"),
 * NULL-terminated: what log lines print and what settings accept. */
extern const char *const log_level_names[];
void log_set_level(int level);
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies in to out (cap bytes, NUL included) with control characters
 * escaped: \n \r \t as such, other bytes below 0x20 and 0x7f as \xNN;
 * everything else, UTF-8 included, as is. Stops early rather than split an
 * escape. Returns the length written. */
size_t log_escape(const char *in, char *out, size_t cap);

#define LOG_AT(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) <= log_current_level)                                                            \
            log_write((lvl), __VA_ARGS__);                                                         \
    } while (0)
#define log_error(...) LOG_AT(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
