#include "common/size.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

int size_parse(const char *s, uint64_t *out_p)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {
        {"", 0},     {"b", 0},  {"k", 10},  {"kb", 10},  {"kib", 10}, {"m", 20},  {"mb", 20},
        {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40},   {"tb", 40}, {"tib", 40},
    };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
                return -1;
            *out_p = (uint64_t)v << units[i].shift;
            return 0;
        }
    }
    return -1;
}
