/* The summary and JSON of a run (report.h). Both read the same derived
 * figures (struct figures), so the text and the JSON never disagree. */
#include "tools/bench/report.h"

#include <string.h>

/* Time to first byte: the library's calls return once the whole object is
 * in the caller's buffer on every transport, so the first byte is not
 * observable apart from the last. */
#define TTFB_MEASURED_AS                                                                           \
    "whole-buffer API: the call's completion (first and last byte arrive together for the caller)"

typedef struct figures {
    double ops_s, mb_s;
    double min, p50, p90, p99, p999, max, mean; /* microseconds */
    uint64_t rdma, token, native, http, fallback, declined, protocol_errors, http_below_threshold;
} figures_t;

/* The RDMA data-path summary, in the order the text shows it. */
typedef struct field {
    const char *json, *text;
    uint64_t v;
} field_t;
#define DATAPATH_FIELDS 8

static void datapath(const figures_t *g, field_t out[DATAPATH_FIELDS])
{
    const field_t f[DATAPATH_FIELDS] = {
        {"rdma", "by RDMA", g->rdma},
        {"token", "token", g->token},
        {"native", "native", g->native},
        {"declined", "declined", g->declined},
        {"protocol_errors", "protocol errors", g->protocol_errors},
        {"fallback", "HTTP fallbacks", g->fallback},
        {"http_below_threshold", "by HTTP below the threshold", g->http_below_threshold},
        {"http", "HTTP", g->http},
    };
    memcpy(out, f, sizeof f);
}

static void figure(const bench_opts_t *o, const run_result_t *r, int k, figures_t *f)
{
    const op_result_t *x = &r->op[k];
    double secs = r->secs > 0 ? r->secs : 1e-9;
    f->ops_s = (double)x->ops / secs;
    f->mb_s = (double)x->bytes / secs / 1e6;
    f->min = (double)hist_min(&x->lat) / 1e3;
    f->p50 = hist_percentile(&x->lat, 50) / 1e3;
    f->p90 = hist_percentile(&x->lat, 90) / 1e3;
    f->p99 = hist_percentile(&x->lat, 99) / 1e3;
    f->p999 = hist_percentile(&x->lat, 99.9) / 1e3;
    f->max = (double)hist_max(&x->lat) / 1e3;
    f->mean = hist_mean(&x->lat) / 1e3;
    f->token = x->stats.token_ops;
    f->native = x->stats.native_ops;
    f->rdma = f->token + f->native;
    f->http = x->stats.http_ops;
    /* libs3rdma counts HTTP object GETs and PUTs only; a DELETE, LIST or
     * HEAD without object bytes went over HTTP unless it went native (a
     * token request has no such form). */
    uint64_t tried = x->ops + x->errors;
    if (k == OP_DELETE || k == OP_LIST || k == OP_HEAD) {
        /* native alone: only its fallbacks can have gone over HTTP (the
         * counters' window is not exactly the counted operations') */
        if (o->transport == S3R_TRANSPORT_NATIVE)
            f->http = x->stats.fallbacks;
        else if (tried > x->stats.native_ops)
            f->http = tried - x->stats.native_ops;
    }
    f->fallback = x->stats.fallbacks;
    f->declined = x->stats.declines;
    f->protocol_errors = x->by_kind[-S3R_ERR_PROTOCOL];
    /* AUTO's own choices of HTTP: what was not a fallback */
    f->http_below_threshold =
        o->transport == S3R_TRANSPORT_AUTO && f->http > f->fallback ? f->http - f->fallback : 0;
}

static uint64_t total_bytes(const run_result_t *r)
{
    uint64_t b = 0;
    for (int k = 0; k < OP_COUNT; k++)
        b += r->op[k].bytes;
    return b;
}

static void size_text(char *out, size_t len, uint64_t v)
{
    if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(out, len, "%lluMiB", (unsigned long long)(v >> 20));
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(out, len, "%lluKiB", (unsigned long long)(v >> 10));
    else
        snprintf(out, len, "%lluB", (unsigned long long)v);
}

void report_text(FILE *f, const bench_opts_t *o, const run_result_t *r)
{
    char lo[32], hi[32];
    size_text(lo, sizeof lo, o->size_min);
    size_text(hi, sizeof hi, o->size_max);
    fprintf(f,
            "s3rdma-bench run %s: transport %s, %d thread(s) x %d in flight, objects %s%s%s, %llu "
            "keys, %.2f s%s%s",
            o->workload, s3r_transport_name(o->transport), o->threads, o->inflight, lo,
            o->size_min != o->size_max ? "-" : "", o->size_min != o->size_max ? hi : "",
            (unsigned long long)r->nkeys, r->secs, r->ucx_transports[0] ? ", UCX " : "",
            r->ucx_transports);
    if (o->warmup_s > 0)
        fprintf(f, " after %.3f s of warm-up", o->warmup_s);
    if (r->seed_secs > 0)
        fprintf(f, " (seeding %.2f s)", r->seed_secs);
    fprintf(f, "\n");
    for (int k = 0; k < OP_COUNT; k++) {
        const op_result_t *x = &r->op[k];
        if (!o->mix[k])
            continue;
        figures_t g;
        figure(o, r, k, &g);
        fprintf(f, "%-6s %10llu ops %11.1f ops/s %10.1f MB/s  errors %llu",
                bench_op_name((bench_op_t)k), (unsigned long long)x->ops, g.ops_s, g.mb_s,
                (unsigned long long)x->errors);
        if (k == OP_READ && o->verify)
            fprintf(f, "  verified %llu/%llu", (unsigned long long)x->verified,
                    (unsigned long long)(x->verified + x->errors));
        fprintf(
            f,
            "\n       latency us: min %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
            g.min, g.p50, g.p90, g.p99, g.p999, g.max);
        if (k == OP_READ)
            fprintf(f, "       time to first byte us: p50 %.1f  p99 %.1f (%s)\n", g.p50, g.p99,
                    TTFB_MEASURED_AS);
        field_t dp[DATAPATH_FIELDS];
        datapath(&g, dp);
        fprintf(f, "       data path:");
        for (int i = 0; i < DATAPATH_FIELDS; i++)
            fprintf(f, "%s %s %llu", i ? "," : "", dp[i].text, (unsigned long long)dp[i].v);
        fprintf(f, "\n");
        for (int e = 0; e < ERRK_COUNT; e++)
            if (x->by_kind[e])
                fprintf(f, "       errors %s: %llu\n", errk_name(e),
                        (unsigned long long)x->by_kind[e]);
    }
    double cpu = r->cpu_user + r->cpu_sys, gb = (double)total_bytes(r) / 1e9;
    fprintf(f, "client CPU %.2f s (user %.2f, sys %.2f)", cpu, r->cpu_user, r->cpu_sys);
    if (gb > 0)
        fprintf(f, ", %.3f s per GB moved", cpu / gb);
    fprintf(f, "\n");
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The head every JSON report starts with: the tool, its version, the
 * workload and the config's first fields (the caller writes the rest of
 * "config", then closes it). */
static void json_head(FILE *f, const bench_opts_t *o, const char *workload)
{
    fprintf(f, "{\n  \"tool\": \"s3rdma-bench\",\n  \"version\": \"%d.%d.%d\",\n  \"workload\": ",
            S3RDMA_VERSION_MAJOR, S3RDMA_VERSION_MINOR, S3RDMA_VERSION_PATCH);
    json_str(f, workload);
    fprintf(f, ",\n  \"config\": {\"endpoints\": ");
    json_str(f, o->endpoints);
    fprintf(f, ", \"bucket\": ");
    json_str(f, o->bucket);
    fprintf(f, ", \"prefix\": ");
    json_str(f, o->prefix);
}

int report_json(const char *path, const bench_opts_t *o, const run_result_t *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    json_head(f, o, o->workload);
    fprintf(f,
            ", \"transport\": \"%s\", \"use_rdma\": %s, \"threads\": %d, \"inflight\": %d, "
            "\"object_size_min\": %llu, \"object_size_max\": %llu, \"duration_s\": %.3f, \"ops\": "
            "%llu, "
            "\"keys\": %llu, \"rdma_threshold\": %llu, \"rdma_fallback\": %s, "
            "\"rdma_buffer_pool\": %s, \"warmup_s\": %.3f, \"gap_s\": %.6f, \"verify\": %s, "
            "\"part_size\": %llu, \"client_per_thread\": %s, \"ucx_transports\": ",
            s3r_transport_name(o->transport), o->use_rdma ? "true" : "false", o->threads,
            o->inflight, (unsigned long long)o->size_min, (unsigned long long)o->size_max,
            o->ops ? 0.0 : o->duration_s, (unsigned long long)o->ops, (unsigned long long)r->nkeys,
            (unsigned long long)o->rdma_threshold, o->rdma_fallback ? "true" : "false",
            o->rdma_buffer_pool ? "true" : "false", o->warmup_s, o->gap_s,
            o->verify ? "true" : "false", (unsigned long long)o->part_size,
            o->client_per_thread ? "true" : "false");
    json_str(f, r->ucx_transports);
    fprintf(f, "},\n  \"seed_s\": %.6f,\n  \"elapsed_s\": %.6f,\n  \"operations\": {", r->seed_secs,
            r->secs);
    const char *sep = "";
    for (int k = 0; k < OP_COUNT; k++) {
        const op_result_t *x = &r->op[k];
        if (!o->mix[k])
            continue;
        figures_t g;
        figure(o, r, k, &g);
        fprintf(f,
                "%s\n    \"%s\": {\"ops\": %llu, \"errors\": %llu, \"verified_reads\": %llu, "
                "\"bytes\": %llu, ",
                sep, bench_op_name((bench_op_t)k), (unsigned long long)x->ops,
                (unsigned long long)x->errors, (unsigned long long)x->verified,
                (unsigned long long)x->bytes);
        fprintf(f, "\"ops_per_s\": %.3f, \"mb_per_s\": %.3f,\n      ", g.ops_s, g.mb_s);
        fprintf(f,
                "\"latency_us\": {\"min\": %.3f, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, "
                "\"p999\": %.3f, "
                "\"max\": %.3f, \"mean\": %.3f},\n      ",
                g.min, g.p50, g.p90, g.p99, g.p999, g.max, g.mean);
        if (k == OP_READ)
            fprintf(f,
                    "\"ttfb_us\": {\"p50\": %.3f, \"p99\": %.3f, \"measured_as\": \"%s\"},\n      ",
                    g.p50, g.p99, TTFB_MEASURED_AS);
        field_t dp[DATAPATH_FIELDS];
        datapath(&g, dp);
        for (int i = 0; i < DATAPATH_FIELDS; i++)
            fprintf(f, "\"%s\": %llu, ", dp[i].json, (unsigned long long)dp[i].v);
        fprintf(f, "\n      \"errors_by_kind\": {");
        const char *esep = "";
        for (int e = 0; e < ERRK_COUNT; e++)
            if (x->by_kind[e]) {
                fprintf(f, "%s\"%s\": %llu", esep, errk_name(e), (unsigned long long)x->by_kind[e]);
                esep = ", ";
            }
        fprintf(f, "}}");
        sep = ",";
    }
    double cpu = r->cpu_user + r->cpu_sys, gb = (double)total_bytes(r) / 1e9;
    fprintf(
        f, "\n  },\n  \"cpu\": {\"user_s\": %.3f, \"sys_s\": %.3f, \"bytes\": %llu, \"s_per_gb\": ",
        r->cpu_user, r->cpu_sys, (unsigned long long)total_bytes(r));
    if (gb > 0)
        fprintf(f, "%.4f", cpu / gb);
    else
        fprintf(f, "null");
    fprintf(f, "}\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* What walk figures the text and the JSON share. */
typedef struct walk_figures {
    double keys_s, p50_ms, p99_ms, max_ms;
    uint64_t native, http;
} walk_figures_t;

static void walk_figure(const walk_result_t *r, walk_figures_t *g)
{
    g->keys_s = r->secs > 0 ? (double)r->keys / r->secs : 0;
    g->p50_ms = hist_percentile(&r->page_lat, 50) / 1e6;
    g->p99_ms = hist_percentile(&r->page_lat, 99) / 1e6;
    g->max_ms = (double)hist_max(&r->page_lat) / 1e6;
    /* a listing has no token form and libs3rdma counts no HTTP LIST */
    g->native = r->stats.native_ops;
    g->http = r->calls > g->native ? r->calls - g->native : 0;
}

void report_walk_text(FILE *f, const bench_opts_t *o, const walk_result_t *r)
{
    walk_figures_t g;
    walk_figure(r, &g);
    if (r->seeded)
        fprintf(f, "seeded %llu objects in %.2f s (%.0f/s, %d threads over HTTP)\n",
                (unsigned long long)r->seeded, r->seed_secs,
                r->seed_secs > 0 ? (double)r->seeded / r->seed_secs : 0, o->threads);
    fprintf(f,
            "s3rdma-bench run walk: transport %s, s3://%s/%s: %llu keys in %llu pages, %.3f s, "
            "%.0f keys/s%s%s\n"
            "       page ms: p50 %.2f  p99 %.2f  max %.2f; keys in order: %s; native %llu, HTTP "
            "%llu\n",
            s3r_transport_name(o->transport), o->bucket, o->prefix, (unsigned long long)r->keys,
            (unsigned long long)r->pages, r->secs, g.keys_s, r->ucx_transports[0] ? ", UCX " : "",
            r->ucx_transports, g.p50_ms, g.p99_ms, g.max_ms, r->sorted ? "yes" : "NO",
            (unsigned long long)g.native, (unsigned long long)g.http);
}

int report_walk_json(const char *path, const bench_opts_t *o, const walk_result_t *r)
{
    walk_figures_t g;
    walk_figure(r, &g);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    json_head(f, o, "walk");
    fprintf(f, ", \"transport\": \"%s\", \"threads\": %d, \"ucx_transports\": ",
            s3r_transport_name(o->transport), o->threads);
    json_str(f, r->ucx_transports);
    fprintf(f,
            "},\n  \"seed\": {\"objects\": %llu, \"secs\": %.6f},\n"
            "  \"walk\": {\"keys\": %llu, \"pages\": %llu, \"secs\": %.6f, \"keys_per_s\": %.1f, "
            "\"sorted\": %s,\n    \"page_ms\": {\"p50\": %.4f, \"p99\": %.4f, \"max\": %.4f}, "
            "\"native\": %llu, \"http\": %llu}\n}\n",
            (unsigned long long)r->seeded, r->seed_secs, (unsigned long long)r->keys,
            (unsigned long long)r->pages, r->secs, g.keys_s, r->sorted ? "true" : "false", g.p50_ms,
            g.p99_ms, g.max_ms, (unsigned long long)g.native, (unsigned long long)g.http);
    return fclose(f) == 0 ? 0 : -1;
}
