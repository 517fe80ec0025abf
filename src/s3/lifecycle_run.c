/* The lifecycle runner; see lifecycle_run.h. */
#include "s3/lifecycle_run.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"

struct s3_lc_runner {
    stor_t *st;
    unsigned day_s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
};

/* What one pass did. */
typedef struct s3_lc_pass {
    unsigned buckets;         /* buckets with a lifecycle configuration seen */
    unsigned uploads_aborted; /* AbortIncompleteMultipartUpload */
    unsigned expired;         /* objects expired, noncurrent versions and markers removed */
    unsigned locked;          /* versions object lock kept from expiry; tried next pass */
    unsigned errors;          /* actions that failed (logged); retried next pass */
    bool leased;              /* false: another gateway holds the lease, nothing done */
} s3_lc_pass_t;

/* Aborts the uploads of bucket that rule (of cfg) is the first to abort and
 * whose time has come (s3_lc_abort_due), while *budget lasts. */
static void abort_uploads(stor_t *st, const stor_bucket_t *b, const s3_lc_t *cfg,
                          const s3_lc_rule_t *rule, int64_t now_s, unsigned day_s, unsigned *budget,
                          s3_lc_pass_t *out)
{
    char *key_marker = NULL;
    char upload_marker[STOR_UPLOAD_ID_LEN + 1] = "";
    int more = 1;
    while (more && *budget > 0) {
        stor_upload_t *u = NULL;
        size_t n = 0;
        stor_status_t s =
            stor_mpu_list(st, b->name, rule->prefix ? rule->prefix : "", key_marker,
                          upload_marker[0] ? upload_marker : NULL, 1000, &u, &n, &more);
        if (s != STOR_OK) {
            log_warn("lifecycle: listing the uploads of %s: %s", b->name, stor_strerror(s));
            out->errors++;
            break;
        }
        for (size_t i = 0; *budget > 0 && i < n; i++) {
            const s3_lc_rule_t *first;
            int64_t due = s3_lc_abort_due(cfg, u[i].key, u[i].initiated_ms / 1000, day_s, &first);
            if (due < 0 || due > now_s || first != rule)
                continue; /* not yet, or an earlier rule's to act on */
            s = stor_mpu_abort(st, b, u[i].key, u[i].upload_id);
            (*budget)--;
            if (s == STOR_OK) {
                out->uploads_aborted++;
                log_info("lifecycle: %s/%s upload %s aborted (rule \"%s\")", b->name, u[i].key,
                         u[i].upload_id, rule->id);
            } else if (s != STOR_ERR_NO_UPLOAD) { /* completed or aborted meanwhile: fine */
                log_warn("lifecycle: aborting %s/%s upload %s: %s", b->name, u[i].key,
                         u[i].upload_id, stor_strerror(s));
                out->errors++;
            }
        }
        free(key_marker);
        key_marker = n ? strdup(u[n - 1].key) : NULL;
        if (n)
            memcpy(upload_marker, u[n - 1].upload_id, sizeof upload_marker);
        stor_uploads_free(u, n);
        if (n && !key_marker)
            break; /* out of memory: next pass */
    }
    free(key_marker);
}

/* The key an iterator gave (klen bytes, not NUL-terminated) as a C string
 * in out; false for one longer than any S3 key (not written by S3). */
static bool key_copy(char out[S3R_MAX_KEY_BYTES + 1], const char *k, size_t klen)
{
    if (klen > S3R_MAX_KEY_BYTES)
        return false;
    memcpy(out, k, klen);
    out[klen] = '\0';
    return true;
}

/* Whether cfg has an enabled rule with one of these actions (markers:
 * ExpiredObjectDeleteMarker, or Expiration Days, which removes expired
 * object delete markers too once they are that old). */
static bool has_action(const s3_lc_t *cfg, bool expiry, bool noncurrent, bool markers)
{
    for (size_t i = 0; i < cfg->n_rules; i++) {
        const s3_lc_rule_t *r = &cfg->rules[i];
        if (r->enabled && ((expiry && (r->exp_days > 0 || r->exp_date >= 0)) ||
                           (noncurrent && r->noncurrent_days > 0) ||
                           (markers && (r->exp_delete_marker || r->exp_days > 0))))
            return true;
    }
    return false;
}

/* Expiration of current versions: every object of b whose time has come
 * under cfg (s3_lc_expiry) is deleted -- a delete marker on top in a
 * versioned bucket -- if it is still the object seen (stor_delete_if: a
 * write since is never expired by this pass). */
static void expire_current(stor_t *st, const stor_bucket_t *b, const s3_lc_t *cfg, int64_t now_s,
                           unsigned day_s, unsigned *budget, s3_lc_pass_t *out)
{
    stor_iter_t *it;
    stor_status_t s = stor_iter_open(st, b->name, "", NULL, &it);
    if (s != STOR_OK) {
        out->errors++;
        return;
    }
    const char *kp;
    size_t klen;
    stor_meta_t m;
    int rc = 0;
    while (*budget > 0 && (rc = stor_iter_next(it, &kp, &klen, &m)) == 1) {
        char key[S3R_MAX_KEY_BYTES + 1]; /* the iterator's is not NUL-terminated */
        if (!key_copy(key, kp, klen)) {
            stor_meta_free(&m);
            continue;
        }
        const s3_lc_rule_t *rule;
        int64_t t = s3_lc_expiry_of(cfg, key, &m, day_s, &rule);
        if (t >= 0 && t <= now_s) {
            /* Object lock: a removal (unversioned bucket) of a protected
             * version is refused; a delete marker on top is not one. */
            s3_lock_guard_t g = {now_s, false};
            stor_precond_t cond = {.must_exist = 1,
                                   .etag = m.etag,
                                   .mtime_ms = m.mtime_ms,
                                   .guard = s3_lock_guard,
                                   .guard_arg = &g};
            stor_deleted_t d;
            s = stor_delete_if(st, b, key, &cond, &d);
            (*budget)--;
            if (s == STOR_OK) {
                out->expired++;
                log_info("lifecycle: %s/%s expired (rule \"%s\")%s", b->name, key, rule->id,
                         d.delete_marker ? ": a delete marker on top" : "");
            } else if (s == STOR_ERR_LOCKED) {
                out->locked++;
            } else if (s != STOR_ERR_PRECONDITION && s != STOR_ERR_NO_KEY) {
                log_warn("lifecycle: expiring %s/%s: %s", b->name, key, stor_strerror(s));
                out->errors++;
            }
        }
        stor_meta_free(&m);
    }
    if (*budget > 0 && rc < 0)
        out->errors++;
    stor_iter_close(it);
}

/* In a versioned bucket: noncurrent versions past their rule's
 * NoncurrentDays (counted from when the next newer version was written),
 * beyond the NewerNoncurrentVersions newest kept, and delete markers left
 * as a key's only version (ExpiredObjectDeleteMarker; or, as S3 does for
 * an Expiration with Days, once the marker is that many days old), removed
 * by version id. */
static void expire_versions(stor_t *st, const stor_bucket_t *b, const s3_lc_t *cfg, int64_t now_s,
                            unsigned day_s, unsigned *budget, s3_lc_pass_t *out)
{
    stor_iter_t *it;
    if (stor_iter_open_versions(st, b->name, "", NULL, NULL, &it) != STOR_OK) {
        out->errors++;
        return;
    }
    char *prev_key = NULL;
    int64_t newer_mtime_s = 0; /* the next newer version's write: when this one went noncurrent */
    int noncurrent = 0;        /* noncurrent versions of this key seen so far (newest first) */
    bool latest_marker = false;
    const char *kp;
    size_t klen;
    stor_meta_t m;
    int is_latest, rc = 0;
    while (*budget > 0 && (rc = stor_iter_next_version(it, &kp, &klen, &m, &is_latest)) == 1) {
        char key[S3R_MAX_KEY_BYTES + 1];
        if (!key_copy(key, kp, klen)) {
            stor_meta_free(&m);
            continue;
        }
        if (is_latest || !prev_key || strcmp(prev_key, key) != 0) {
            free(prev_key);
            prev_key = strdup(key);
            noncurrent = 0;
            latest_marker = m.delete_marker != NULL;
        } else {
            noncurrent++;
        }
        char vid[STOR_VERSION_ID_LEN + 1];
        stor_version_id(&m, vid);
        const char *why = NULL, *rule_id = NULL;
        for (size_t i = 0; !why && i < cfg->n_rules; i++) {
            const s3_lc_rule_t *r = &cfg->rules[i];
            if (!r->enabled || !s3_lc_rule_matches_of(r, key, &m))
                continue;
            if (!is_latest && r->noncurrent_days > 0 && noncurrent > r->newer_noncurrent &&
                s3_lc_due(newer_mtime_s, r->noncurrent_days, day_s) <= now_s)
                why = "noncurrent version expired";
            else if (is_latest && latest_marker &&
                     (r->exp_delete_marker ||
                      (r->exp_days > 0 &&
                       s3_lc_due(m.mtime_ms / 1000, r->exp_days, day_s) <= now_s)))
                why = "expired delete marker"; /* checked below: the key's only version */
            rule_id = r->id;
        }
        newer_mtime_s = m.mtime_ms / 1000;
        bool only_marker = false;
        if (why && is_latest) {
            /* A marker is expired only when no older version is under it. */
            stor_meta_t older;
            int older_latest;
            stor_iter_t *peek;
            only_marker = stor_iter_open_versions(st, b->name, key, key, vid, &peek) == STOR_OK;
            if (only_marker) {
                const char *k2;
                size_t l2;
                if (stor_iter_next_version(peek, &k2, &l2, &older, &older_latest) == 1) {
                    only_marker = l2 != strlen(key) || memcmp(k2, key, l2) != 0;
                    stor_meta_free(&older);
                }
                stor_iter_close(peek);
            }
            if (!only_marker)
                why = NULL;
        }
        if (why) {
            /* Object lock: a protected version stays (checked in the
             * removal's transaction); lifecycle never bypasses. */
            s3_lock_guard_t g = {now_s, false};
            stor_precond_t cond = {.guard = s3_lock_guard, .guard_arg = &g};
            stor_deleted_t d;
            stor_status_t s = stor_delete_version_if(st, b, key, vid, &cond, &d);
            (*budget)--;
            if (s == STOR_ERR_LOCKED) {
                out->locked++;
            } else if (s == STOR_OK) {
                out->expired++;
                log_info("lifecycle: %s/%s version %s: %s (rule \"%s\")", b->name, key, vid, why,
                         rule_id);
            } else if (s != STOR_ERR_NO_VERSION) {
                log_warn("lifecycle: removing %s/%s version %s: %s", b->name, key, vid,
                         stor_strerror(s));
                out->errors++;
            }
        }
        stor_meta_free(&m);
    }
    if (*budget > 0 && rc < 0)
        out->errors++;
    free(prev_key);
    stor_iter_close(it);
}

/* The rules of bucket b, applied. */
static void bucket_pass(stor_t *st, const stor_bucket_t *b, int64_t now_s, unsigned day_s,
                        unsigned *budget, s3_lc_pass_t *out)
{
    buf_t doc;
    uint64_t gen;
    stor_status_t s = stor_bucket_config_get(st, b, STOR_BCFG_LIFECYCLE, &doc, &gen);
    s3_lc_t cfg;
    char why[256];
    if (s != STOR_OK || doc.len == 0 ||
        s3_lc_from_xml(doc.data, doc.len, &cfg, why, sizeof why) != S3E_NONE) {
        if (s != STOR_OK && s != STOR_ERR_NO_BUCKET) {
            log_warn("lifecycle: reading the configuration of %s: %s", b->name, stor_strerror(s));
            out->errors++;
        }
        buf_free(&doc);
        return;
    }
    buf_free(&doc);
    out->buckets++;
    for (size_t i = 0; *budget > 0 && i < cfg.n_rules; i++) {
        const s3_lc_rule_t *r = &cfg.rules[i];
        if (r->enabled && r->abort_days > 0)
            abort_uploads(st, b, &cfg, r, now_s, day_s, budget, out);
    }
    if (*budget > 0 && has_action(&cfg, true, false, false))
        expire_current(st, b, &cfg, now_s, day_s, budget, out);
    if (*budget > 0 && b->versioning != STOR_VERSIONING_OFF && has_action(&cfg, false, true, true))
        expire_versions(st, b, &cfg, now_s, day_s, budget, out);
    s3_lc_free(&cfg);
}

/* One pass over every bucket at now_s (unix seconds), a day being day_s
 * seconds: at most S3R_LC_PASS_ACTIONS actions, the rest left for the next
 * pass. Takes or renews the lease for lease_ms first. */
static void s3_lc_pass(stor_t *st, int64_t now_s, unsigned day_s, uint32_t lease_ms,
                       s3_lc_pass_t *out)
{
    memset(out, 0, sizeof *out);
    stor_status_t s = stor_lease(st, "lifecycle", lease_ms);
    if (s != STOR_OK) {
        if (s != STOR_ERR_PRECONDITION)
            out->errors++;
        return;
    }
    out->leased = true;
    stor_bucket_t *bs = NULL;
    size_t n = 0;
    if ((s = stor_bucket_list(st, &bs, &n)) != STOR_OK) {
        log_warn("lifecycle: listing the buckets: %s", stor_strerror(s));
        out->errors++;
        return;
    }
    unsigned budget = S3R_LC_PASS_ACTIONS;
    for (size_t i = 0; budget > 0 && i < n; i++)
        if (bs[i].cfg_mask & (1u << STOR_BCFG_LIFECYCLE))
            bucket_pass(st, &bs[i], now_s, day_s, &budget, out);
    free(bs);
}

/* Seconds between passes: a day / 24, within 1 s .. 1 h. */
static unsigned interval_s(unsigned day_s)
{
    unsigned i = day_s / 24;
    return i < 1 ? 1 : i > 3600 ? 3600 : i;
}

static void *runner_main(void *arg)
{
    s3_lc_runner_t *r = arg;
    unsigned every = interval_s(r->day_s);
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        pthread_mutex_unlock(&r->lock);
        s3_lc_pass_t p;
        s3_lc_pass(r->st, clock_wall_ms() / 1000, r->day_s, 3 * every * 1000u, &p);
        if (p.uploads_aborted || p.expired || p.locked || p.errors)
            log_info("lifecycle: pass over %u buckets: %u uploads aborted, %u versions expired, "
                     "%u kept by object lock, %u errors",
                     p.buckets, p.uploads_aborted, p.expired, p.locked, p.errors);
        pthread_mutex_lock(&r->lock);
        struct timespec until = clock_after_ms(CLOCK_REALTIME, every * 1000);
        while (!r->stop && pthread_cond_timedwait(&r->cond, &r->lock, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

s3_lc_runner_t *s3_lc_runner_start(stor_t *st, unsigned day_s)
{
    s3_lc_runner_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->st = st;
    r->day_s = day_s ? day_s : S3_LC_DAY_S;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    if (pthread_create(&r->thread, NULL, runner_main, r) != 0) {
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        free(r);
        return NULL;
    }
    return r;
}

void s3_lc_runner_stop(s3_lc_runner_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}
