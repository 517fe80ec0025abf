/* The walk workload (walk.h). */
#include "tools/bench/walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/client.h"
#include "tools/bench/seed.h"

#define WALK_PAGE_KEYS 1000 /* max_keys of each page, as aws s3 ls asks */

/* Lists every page under the prefix over c into r. */
static s3r_status_t walk_pages(const bench_opts_t *o, s3r_client_t *c, walk_result_t *r)
{
    char *token = NULL, *last = NULL;
    s3r_status_t st = S3R_OK;
    r->sorted = 1;
    uint64_t t0 = hist_now_ns();
    do {
        s3r_list_opts_t lo = {.prefix = o->prefix, .max_keys = WALK_PAGE_KEYS, .continuation_token = token};
        s3r_object_list_t *l = NULL;
        uint64_t p0 = hist_now_ns();
        st = s3r_object_list_pages(c, o->bucket, &lo, (unsigned)o->walk_pages, &l);
        uint64_t ns = hist_now_ns() - p0;
        free(token);
        token = NULL;
        if (st != S3R_OK)
            break;
        /* Full pages (no delimiter), but for the walk's last. */
        uint64_t pages =
            l->n_objects ? (l->n_objects + WALK_PAGE_KEYS - 1) / WALK_PAGE_KEYS : 1;
        for (uint64_t i = 0; i < pages; i++)
            hist_record(&r->page_lat, ns / pages);
        r->pages += pages;
        r->calls++;
        for (size_t i = 0; i < l->n_objects; i++) {
            const char *k = l->objects[i].key;
            if (last && strcmp(k, last) <= 0)
                r->sorted = 0;
            free(last);
            last = strdup(k);
        }
        r->keys += l->n_objects;
        if (l->truncated && l->next_token && !(token = strdup(l->next_token)))
            st = S3R_ERR_NOMEM;
        s3r_object_list_free(l);
    } while (token);
    r->secs = (double)(hist_now_ns() - t0) / 1e9;
    free(last);
    return st;
}

int bench_walk(const bench_opts_t *o, walk_result_t *r)
{
    memset(r, 0, sizeof *r);
    hist_reset(&r->page_lat);
    s3r_client_t *setup = NULL, *c = NULL;
    bench_keys_t keys = {0};
    int rc = 1;
    if (bench_client_make(o, 1, &setup) || bench_keys_prepare(o, setup, 1, 0, &keys))
        goto out;
    r->seeded = keys.written;
    r->seed_secs = keys.seed_secs;
    if (bench_client_make(o, 0, &c))
        goto out;
    s3r_stats_t before, after;
    s3r_client_stats(c, &before);
    s3r_status_t st = walk_pages(o, c, r);
    s3r_client_stats(c, &after);
    after.native_ops -= before.native_ops;
    after.http_ops -= before.http_ops;
    after.token_ops -= before.token_ops;
    after.fallbacks -= before.fallbacks;
    r->stats = after;
    s3r_rdma_info_t info;
    if (s3r_client_rdma_info(c, &info) == S3R_OK)
        snprintf(r->ucx_transports, sizeof r->ucx_transports, "%s", info.transports);
    if (st != S3R_OK) {
        char what[1200];
        snprintf(what, sizeof what, "list s3://%s/%s (page %llu)", o->bucket, o->prefix,
                 (unsigned long long)r->pages + 1);
        bench_client_error(c, what, st);
        goto out;
    }
    rc = 0;
out:
    bench_keys_free(&keys);
    s3r_client_destroy(c);
    s3r_client_destroy(setup);
    return rc;
}
