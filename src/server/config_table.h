/* The settings table's shape (config_settings.c holds the table itself;
 * config.c reads it for defaults, the file, the environment, the flags and
 * --print-config). Private to src/server. */
#ifndef S3R_SERVER_CONFIG_TABLE_H
#define S3R_SERVER_CONFIG_TABLE_H

#include <stddef.h>

/* How a setting's text becomes its field. */
typedef enum setting_type {
    T_TEXT,   /* char *: any text */
    T_SECRET, /* char *: any text, never printed by --print-config */
    T_BOOL,   /* bool: true or false */
    T_COUNT,  /* unsigned: a whole decimal number in [lo, hi] */
    T_SIZE,   /* uint64_t: a size ("64MiB") in [lo, hi] */
    T_ADDR,   /* server_addr_t; lo holds the ADDR_* flags */
    T_CHOICE, /* int: the index of the word in choices */
    T_UIDS,   /* rdma.trusted_uids: a comma-separated uid list */
} setting_type_t;

#define ADDR_OFF_OK   1u /* "off" turns the listener off */
#define ADDR_EMPTY_OK 2u /* "" leaves the address unset (derived from others) */

/* One table drives defaults, the file keys, the environment and the flags. */
typedef struct setting {
    const char *key;  /* YAML path: "durability", "rdma.listen" */
    const char *flag; /* --flag */
    const char *env;  /* S3RDMA_* */
    const char *dflt; /* parsed like any other value */
    setting_type_t type;
    size_t offset;              /* of the field in server_config_t */
    unsigned long long lo, hi;  /* T_COUNT, T_SIZE: the range; T_ADDR: flags in lo */
    const char *const *choices; /* T_CHOICE: NULL-terminated */
    const char *help;
} setting_t;

/* Every setting, in --print-config's order; server_n_settings of them (at
 * most SERVER_MAX_SETTINGS). */
extern const setting_t server_settings[];
extern const size_t server_n_settings;

#endif
