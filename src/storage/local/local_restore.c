/* The index's restore point: saving it (two checksummed slots in
 * index/restore) and rolling data.mdb back to it after the OS went down.
 * See local_restore.h for why and when. The file is read only by the host that
 * wrote it (a data directory is one host's), so fields are in host order. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_restore.h"

const char *local_restore_boot_id_path = "/proc/sys/kernel/random/boot_id";

static const char MAGIC[8] = {'s', '3', 'r', 'R', 'S', 'T', 'R', '1'};

/* One slot: a header, then the two meta pages at META_OFF. */
typedef struct slot_hdr {
    char magic[8];
    uint64_t seq;   /* which save: the valid slot with the larger one wins */
    uint64_t txnid; /* the snapshot (for the log) */
    uint32_t psize; /* LMDB page size; the metas are 2 * psize bytes */
    uint32_t crc;   /* CRC32C of the header (this field 0) and the metas */
    char boot[RESTORE_BOOT_LEN];
} slot_hdr_t;

#define META_OFF    4096u
#define SLOT_STRIDE (META_OFF + 2u * RESTORE_PSIZE_MAX)

struct local_restore {
    int fd;
    uint64_t seq; /* the next save's */
    char boot[RESTORE_BOOT_LEN];
    uint8_t *slot; /* SLOT_STRIDE bytes of scratch */
};

/* This boot's id (from local_restore_boot_id_path) into out, NUL-padded. 0, or -1
 * if it cannot be read. */
static int restore_boot_id(char out[RESTORE_BOOT_LEN])
{
    memset(out, 0, RESTORE_BOOT_LEN);
    int fd = open(local_restore_boot_id_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        log_error("storage: cannot read the boot id: %s", strerror(errno));
        return -1;
    }
    ssize_t n = read(fd, out, RESTORE_BOOT_LEN - 1);
    close(fd);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
        out[--n] = '\0';
    if (n <= 0) {
        log_error("storage: empty boot id");
        return -1;
    }
    return 0;
}

static uint32_t slot_crc(const uint8_t *slot)
{
    slot_hdr_t h;
    memcpy(&h, slot, sizeof h);
    h.crc = 0;
    uint32_t crc = hash_crc32c_update(0, &h, sizeof h);
    return hash_crc32c_update(crc, slot + META_OFF, 2u * (size_t)h.psize);
}

/* Reads slot i of fd into buf (SLOT_STRIDE bytes); 1 if it holds a whole,
 * valid save (its header into *h), 0 if not (never written, torn). */
static int slot_load(int fd, unsigned i, uint8_t *buf, slot_hdr_t *h)
{
    ssize_t n = pread(fd, buf, SLOT_STRIDE, (off_t)i * SLOT_STRIDE);
    if (n < (ssize_t)sizeof *h)
        return 0;
    memcpy(h, buf, sizeof *h);
    if (memcmp(h->magic, MAGIC, sizeof MAGIC) != 0 || h->psize < 512 ||
        h->psize > RESTORE_PSIZE_MAX || (size_t)n < META_OFF + 2u * (size_t)h->psize ||
        h->boot[RESTORE_BOOT_LEN - 1] != '\0')
        return 0;
    return slot_crc(buf) == h->crc;
}

/* The newest valid slot of fd into buf/h: its index, or -1 if neither is. */
static int newest_slot(int fd, uint8_t *buf, slot_hdr_t *h)
{
    slot_hdr_t h0, h1;
    int v0 = slot_load(fd, 0, buf, &h0);
    int v1 = slot_load(fd, 1, buf, &h1);
    int best = v0 && (!v1 || h0.seq > h1.seq) ? 0 : v1 ? 1 : -1;
    if (best < 0)
        return -1;
    *h = best ? h1 : h0;
    if (best == 0)
        slot_load(fd, 0, buf, h); /* buf holds what was read of slot 1 */
    return best;
}

int local_restore_recover(int index_dirfd)
{
    int fd = openat(index_dirfd, RESTORE_FILE, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        log_error("storage: open index/%s: %s", RESTORE_FILE, strerror(errno));
        return -1;
    }
    int rc = -1, dfd = -1;
    uint8_t *buf = malloc(SLOT_STRIDE), *cur = malloc(2u * RESTORE_PSIZE_MAX);
    slot_hdr_t h;
    char boot[RESTORE_BOOT_LEN];
    if (!buf || !cur) {
        log_error("storage: out of memory reading the restore point");
        goto out;
    }
    if (newest_slot(fd, buf, &h) < 0) {
        rc = 0; /* never saved whole: the store had no commit before it */
        goto out;
    }
    if (restore_boot_id(boot) != 0)
        goto out;
    if (memcmp(boot, h.boot, RESTORE_BOOT_LEN) == 0) {
        rc = 0; /* same boot: the page cache kept every commit whole */
        goto out;
    }
    size_t len = 2u * (size_t)h.psize;
    dfd = openat(index_dirfd, "data.mdb", O_RDWR | O_CLOEXEC);
    if (dfd < 0 || pread(dfd, cur, len, 0) != (ssize_t)len) {
        log_error("storage: index/data.mdb is missing or short, but a restore point exists");
        goto out;
    }
    if (memcmp(cur, buf + META_OFF, len) == 0) {
        rc = 0; /* nothing was committed after the restore point */
        goto out;
    }
    if (pwrite(dfd, buf + META_OFF, len, 0) != (ssize_t)len || fdatasync(dfd) != 0) {
        log_error("storage: rolling the index back to its restore point: %s", strerror(errno));
        goto out;
    }
    log_warn("storage: the OS went down since the last sync point: the index is back at that "
             "sync point (transaction %llu); relaxed-mode writes acknowledged after it are lost",
             (unsigned long long)h.txnid);
    rc = 1;
out:
    if (dfd >= 0)
        close(dfd);
    close(fd);
    free(buf);
    free(cur);
    return rc;
}

local_restore_t *local_restore_open(int index_dirfd)
{
    local_restore_t *r = calloc(1, sizeof *r);
    if (!r || !(r->slot = malloc(SLOT_STRIDE))) {
        free(r);
        log_error("storage: out of memory opening the restore point");
        return NULL;
    }
    r->fd = -1;
    if (restore_boot_id(r->boot) != 0)
        goto fail;
    r->fd = openat(index_dirfd, RESTORE_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (r->fd < 0 || fsync(index_dirfd) != 0) {
        log_error("storage: index/%s: %s", RESTORE_FILE, strerror(errno));
        goto fail;
    }
    slot_hdr_t h;
    r->seq = newest_slot(r->fd, r->slot, &h) < 0 ? 1 : h.seq + 1;
    return r;
fail:
    if (r->fd >= 0)
        close(r->fd);
    free(r->slot);
    free(r);
    return NULL;
}

int local_restore_save(local_restore_t *r, uint64_t txnid, const void *metas, size_t psize)
{
    if (psize < 512 || psize > RESTORE_PSIZE_MAX) {
        log_error("storage: LMDB page size %zu is not supported by the restore point", psize);
        return -1;
    }
    slot_hdr_t h = {.seq = r->seq, .txnid = txnid, .psize = (uint32_t)psize};
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    memcpy(h.boot, r->boot, RESTORE_BOOT_LEN);
    memset(r->slot, 0, META_OFF);
    memcpy(r->slot, &h, sizeof h);
    memcpy(r->slot + META_OFF, metas, 2 * psize);
    h.crc = slot_crc(r->slot);
    memcpy(r->slot, &h, sizeof h);
    size_t len = META_OFF + 2 * psize;
    off_t at = (off_t)(r->seq % 2) * SLOT_STRIDE;
    if (pwrite(r->fd, r->slot, len, at) != (ssize_t)len || fdatasync(r->fd) != 0) {
        log_error("storage: saving the index's restore point: %s", strerror(errno));
        return -1;
    }
    r->seq++;
    return 0;
}

void local_restore_close(local_restore_t *r)
{
    if (!r)
        return;
    close(r->fd);
    free(r->slot);
    free(r);
}
