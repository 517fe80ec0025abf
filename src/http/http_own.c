/* The server's own pages: health, metrics, stats (http_own.h). */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hash.h"
#include "common/metrics.h"
#include "http/http_internal.h"
#include "http/http_own.h"

/* Replies status with len bytes of text (copied) of the given type. */
static void reply_text(s3_req_t *req, int status, const char *type, const char *text, size_t len)
{
    s3_out_t out = {.kind = S3_OUT_BUFFER, .data = malloc(len), .len = len};
    if (!out.data) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    memcpy(out.data, text, len);
    s3_reply_header(req, "Content-Type", type);
    s3_reply_send(req, status, &out);
}

void http_own_reply_health(s3_req_t *req, const char *url)
{
    s3_server_t *srv = req->srv;
    bool ok =
        strcmp(url, HTTP_OWN_HEALTH_LIVE) == 0 ||
        (atomic_load(&srv->ready) && !atomic_load(&srv->stopping) && stor_ready(srv->cfg.store));
    s3_reply_header(req, "Cache-Control", "no-store");
    if (ok)
        reply_text(req, 200, "text/plain", "ok\n", 3);
    else
        reply_text(req, 503, "text/plain", "not ready\n", 10);
}

/* The HTTP connections' families of the /metrics page; ctx: the guard. */
static void render_connections(void *ctx, buf_t *out)
{
    http_guard_stats_t cs;
    http_guard_get_stats(ctx, &cs);
    metrics_write_family(out, "s3rdma_http_connections", "gauge", "HTTP connections open.");
    metrics_write_sample(out, "s3rdma_http_connections", "", cs.open);
    metrics_write_family(out, "s3rdma_http_connections_closed_total", "counter",
                         "HTTP connections shut down by the server, by reason (docs/limits.md).");
    metrics_write_sample(out, "s3rdma_http_connections_closed_total", "reason=\"slow_head\"",
                         cs.closed_head);
    metrics_write_sample(out, "s3rdma_http_connections_closed_total", "reason=\"slow_body\"",
                         cs.closed_body);
    metrics_write_sample(out, "s3rdma_http_connections_closed_total", "reason=\"full\"",
                         cs.refused_full);
}

void http_own_reply_metrics(s3_req_t *req)
{
    const char *token = req->srv->cfg.metrics_token;
    if (token) {
        const char *auth = s3_req_header(req, "Authorization");
        size_t tlen = strlen(token);
        if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != tlen ||
            !hash_ct_equal(auth + 7, token, tlen)) {
            s3_reply_error(req, S3E_ACCESS_DENIED,
                           "The metrics page needs Authorization: Bearer <metrics.token>.");
            return;
        }
    }
    buf_t page;
    buf_init(&page, 1 << 20);
    s3_metrics_render(req->srv, render_connections, http_server_of(req->srv)->guard, &page);
    s3_out_t out = {.kind = S3_OUT_BUFFER};
    out.data = buf_steal(&page, &out.len);
    if (!out.data) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    s3_reply_header(req, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    s3_reply_send(req, 200, &out);
}

void http_own_reply_stats(s3_req_t *req)
{
    buf_t json;
    buf_init(&json, 4096);
    const s3_rdma_report_t *report = req->srv->cfg.rdma_report;
    s3_rdma_stats_t rs = {0};
    if (report)
        report->stats(report->ctx, &rs);
    http_guard_stats_t cs;
    http_guard_get_stats(http_server_of(req->srv)->guard, &cs);
    buf_printf(&json,
               "{\"http_inflight\": %u, \"http_requests\": %lu, \"http_connections\": %u, "
               "\"http_closed_slow_head\": %llu, \"http_closed_slow_body\": %llu, "
               "\"rdma_enabled\": %s, \"rdma_sessions\": %u, \"native_dropped\": %lu, "
               "\"native_malformed\": %lu, \"document_bytes\": %llu}\n",
               atomic_load(&req->srv->inflight), atomic_load(&req->srv->request_seq), cs.open,
               (unsigned long long)cs.closed_head, (unsigned long long)cs.closed_body,
               rs.enabled ? "true" : "false", rs.sessions, rs.native_dropped, rs.native_malformed,
               (unsigned long long)atomic_load(&req->srv->doc_bytes));
    s3_out_t out = {.kind = S3_OUT_BUFFER};
    out.data = buf_steal(&json, &out.len);
    s3_reply_header(req, "Content-Type", "application/json");
    s3_reply_send(req, 200, &out);
}
