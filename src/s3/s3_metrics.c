/* The requests' metrics and the GET /metrics page (docs/operations.md has
 * every name and label). Counting is lock-free: one relaxed atomic add per
 * counter a finished request moves (requests, latency bucket and sum, bytes
 * in and out, error, decline), in arrays indexed by operation, transport
 * and status class, so nothing on the request path allocates or waits. The
 * page reads those, the HTTP connections (the frontend's, through a
 * callback), the RDMA transport's figures (cfg.rdma_report, given by
 * src/rdmafe) and the store's usage (stor_usage, O(1)): a scrape never
 * walks the index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"
#include "s3/s3_request.h"

/* The HTTP frontend's own endpoints (src/http/http_own.c), counted under
 * these names. */
const s3_op_t s3_op_stats = {"Stats", NULL, NULL};
const s3_op_t s3_op_metrics = {"Metrics", NULL, NULL};
const s3_op_t s3_op_health = {"Health", NULL, NULL};

/* Every operation a request can be counted under; index 0 is a request
 * that was never routed to one (a 405, a 501 subresource, a refused
 * request), labelled op="-". */
static const s3_op_t *const counted_ops[] = {
    NULL,
    &s3_op_list_buckets,
    &s3_op_create_bucket,
    &s3_op_delete_bucket,
    &s3_op_head_bucket,
    &s3_op_get_bucket_location,
    &s3_op_list_objects,
    &s3_op_delete_objects,
    &s3_op_put_object,
    &s3_op_copy_object,
    &s3_op_get_object,
    &s3_op_head_object,
    &s3_op_delete_object,
    &s3_op_create_mpu,
    &s3_op_upload_part,
    &s3_op_upload_part_copy,
    &s3_op_complete_mpu,
    &s3_op_abort_mpu,
    &s3_op_list_parts,
    &s3_op_list_mpu,
    &s3_op_post_object,
    &s3_op_list_object_versions,
    &s3_op_get_bucket_versioning,
    &s3_op_put_bucket_versioning,
    &s3_op_get_bucket_acl,
    &s3_op_put_bucket_acl,
    &s3_op_get_object_acl,
    &s3_op_put_object_acl,
    &s3_op_get_bucket_policy,
    &s3_op_get_bucket_cors,
    &s3_op_put_bucket_cors,
    &s3_op_delete_bucket_cors,
    &s3_op_cors_preflight,
    &s3_op_get_bucket_tagging,
    &s3_op_put_bucket_tagging,
    &s3_op_delete_bucket_tagging,
    &s3_op_get_bucket_lifecycle,
    &s3_op_put_bucket_lifecycle,
    &s3_op_delete_bucket_lifecycle,
    &s3_op_get_object_lock_config,
    &s3_op_get_bucket_encryption,
    &s3_op_put_bucket_encryption,
    &s3_op_delete_bucket_encryption,
    &s3_op_put_object_lock_config,
    &s3_op_get_object_retention,
    &s3_op_put_object_retention,
    &s3_op_get_object_legal_hold,
    &s3_op_put_object_legal_hold,
    &s3_op_get_object_tagging,
    &s3_op_put_object_tagging,
    &s3_op_delete_object_tagging,
    &s3_op_get_object_attributes,
    &s3_op_stats,
    &s3_op_metrics,
    &s3_op_health,
};
#define N_OPS (sizeof(counted_ops) / sizeof(counted_ops[0]))

/* Status classes: 0 for a request whose connection ended before a reply,
 * else the status's first digit. */
#define N_CLASSES 6
static const char *const class_names[N_CLASSES] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};

static const char *const decline_names[S3_DECLINE_COUNT] = {
    [S3_DECLINE_DISABLED] = "disabled",
    [S3_DECLINE_SESSION] = "session",
    [S3_DECLINE_TRANSPORT] = "transport",
    [S3_DECLINE_FOREIGN] = "foreign",
};

struct s3_metrics {
    metrics_counter_t requests[N_OPS][S3_TRANSPORT_COUNT][N_CLASSES];
    metrics_hist_t latency[N_OPS];
    metrics_counter_t bytes_in[S3_TRANSPORT_COUNT], bytes_out[S3_TRANSPORT_COUNT];
    metrics_counter_t errors[S3E_COUNT];
    metrics_counter_t declines[S3_DECLINE_COUNT];
    metrics_counter_t fallbacks;
};

struct s3_metrics *s3_metrics_new(void)
{
    return calloc(1, sizeof(struct s3_metrics));
}

void s3_metrics_free(struct s3_metrics *m)
{
    free(m);
}

/* The index of op in counted_ops: a scan of a few dozen pointers, cheaper
 * than the clock reads around it, and no field every operation must fill. */
static size_t op_index(const s3_op_t *op)
{
    for (size_t i = 1; op && i < N_OPS; i++)
        if (counted_ops[i] == op)
            return i;
    return 0;
}

void s3_metrics_count(struct s3_metrics *m, const s3_req_outcome_t *o)
{
    const s3_access_record_t *rec = &o->rec;
    size_t op = op_index(o->op);
    s3_transport_t t = rec->transport;
    unsigned cls = rec->status >= 100 && rec->status < 600 ? (unsigned)rec->status / 100 : 0;
    metrics_add(&m->requests[op][t][cls], 1);
    metrics_hist_observe(&m->latency[op], rec->duration_us);
    if (rec->bytes_in)
        metrics_add(&m->bytes_in[t], rec->bytes_in);
    if (rec->bytes_out)
        metrics_add(&m->bytes_out[t], rec->bytes_out);
    if (o->error != S3E_NONE && o->error < S3E_COUNT)
        metrics_add(&m->errors[o->error], 1);
    if (o->decline != S3_DECLINE_NONE) {
        metrics_add(&m->declines[o->decline], 1);
        /* A foreign token's GET or HEAD is answered over HTTP at once. */
        if (rec->status >= 200 && rec->status < 300)
            metrics_add(&m->fallbacks, 1);
    }
}

/* ---- the page ------------------------------------------------------------------ */

static const char *op_name(size_t i)
{
    return i ? counted_ops[i]->name : "-";
}

static void render_requests(const struct s3_metrics *m, buf_t *out)
{
    char labels[160];
    metrics_write_family(out, "s3rdma_requests_total", "counter",
                         "Requests finished, by S3 operation, transport and status class.");
    for (size_t op = 0; op < N_OPS; op++)
        for (int t = 0; t < S3_TRANSPORT_COUNT; t++)
            for (int c = 0; c < N_CLASSES; c++) {
                uint64_t v = metrics_get(&m->requests[op][t][c]);
                if (!v)
                    continue;
                snprintf(labels, sizeof(labels), "op=\"%s\",transport=\"%s\",status=\"%s\"",
                         op_name(op), s3_transport_name((s3_transport_t)t), class_names[c]);
                metrics_write_sample(out, "s3rdma_requests_total", labels, v);
            }
    metrics_write_family(out, "s3rdma_request_duration_seconds", "histogram",
                         "Request latency, arrival to the end of the reply, by S3 operation.");
    for (size_t op = 0; op < N_OPS; op++) {
        uint64_t n = 0;
        for (int b = 0; b <= METRICS_LATENCY_BUCKETS; b++)
            n += atomic_load_explicit(&m->latency[op].bucket[b], memory_order_relaxed);
        if (!n)
            continue;
        snprintf(labels, sizeof(labels), "op=\"%s\"", op_name(op));
        metrics_write_hist(out, "s3rdma_request_duration_seconds", labels, &m->latency[op]);
    }
    metrics_write_family(out, "s3rdma_received_bytes_total", "counter",
                         "Request body bytes taken in, by transport (token: RDMA-read).");
    for (int t = 0; t < S3_TRANSPORT_COUNT; t++) {
        snprintf(labels, sizeof(labels), "transport=\"%s\"", s3_transport_name((s3_transport_t)t));
        metrics_write_sample(out, "s3rdma_received_bytes_total", labels,
                             metrics_get(&m->bytes_in[t]));
    }
    metrics_write_family(out, "s3rdma_sent_bytes_total", "counter",
                         "Reply body bytes sent, by transport (token: RDMA-written).");
    for (int t = 0; t < S3_TRANSPORT_COUNT; t++) {
        snprintf(labels, sizeof(labels), "transport=\"%s\"", s3_transport_name((s3_transport_t)t));
        metrics_write_sample(out, "s3rdma_sent_bytes_total", labels, metrics_get(&m->bytes_out[t]));
    }
    /* Several table rows share a code (InvalidArgument, InvalidRange): one
     * sample per code, the rows summed. */
    metrics_write_family(out, "s3rdma_errors_total", "counter", "Error replies, by S3 error code.");
    for (int e = 1; e < S3E_COUNT; e++) {
        const char *code = s3_error_code((s3_error_t)e);
        int first = 1;
        for (int p = 1; p < e && first; p++)
            first = strcmp(s3_error_code((s3_error_t)p), code) != 0;
        if (!first)
            continue;
        uint64_t v = 0;
        for (int same = e; same < S3E_COUNT; same++)
            if (strcmp(s3_error_code((s3_error_t)same), code) == 0)
                v += metrics_get(&m->errors[same]);
        if (!v)
            continue;
        snprintf(labels, sizeof(labels), "code=\"%s\"", code);
        metrics_write_sample(out, "s3rdma_errors_total", labels, v);
    }
    metrics_write_family(out, "s3rdma_token_declines_total", "counter",
                         "x-amz-rdma-token requests declined (the client redoes them over HTTP), "
                         "by reason.");
    for (int d = 1; d < S3_DECLINE_COUNT; d++) {
        snprintf(labels, sizeof(labels), "reason=\"%s\"", decline_names[d]);
        metrics_write_sample(out, "s3rdma_token_declines_total", labels,
                             metrics_get(&m->declines[d]));
    }
    metrics_write_family(out, "s3rdma_token_fallbacks_total", "counter",
                         "Declined token requests answered over HTTP in the same reply "
                         "(a GET or HEAD with another implementation's token).");
    metrics_write_sample(out, "s3rdma_token_fallbacks_total", "", metrics_get(&m->fallbacks));
}

static void gauge(buf_t *out, const char *name, const char *help, uint64_t v)
{
    metrics_write_single(out, name, "gauge", help, v);
}

void s3_metrics_render(s3_server_t *srv, void (*transport)(void *ctx, buf_t *out), void *ctx,
                       buf_t *out)
{
    render_requests(srv->metrics, out);
    gauge(out, "s3rdma_requests_in_flight",
          "Requests being served now, over HTTP and native (this scrape included).",
          atomic_load(&srv->inflight));
    if (transport)
        transport(ctx, out);
    const s3_rdma_report_t *rdma = srv->cfg.rdma_report;
    if (rdma)
        rdma->metrics(rdma->ctx, out);
    uint64_t objects, bytes;
    stor_usage(srv->cfg.store, &objects, &bytes);
    gauge(out, "s3rdma_storage_objects", "Objects stored.", objects);
    gauge(out, "s3rdma_storage_bytes",
          "Bytes of the objects stored (multipart uploads in progress not included).", bytes);
    gauge(out, "s3rdma_storage_index_bytes",
          "Bytes of the local index file up to its last page in use, free pages included "
          "(0 on RADOS).",
          stor_index_bytes(srv->cfg.store));
}
