/* The RDMA transport's figures on the server's own pages (s3_rdma_report_t):
 * the session server's counters (rdma_server_get_stats) as the GET /metrics
 * families docs/operations.md lists, and GET /stats's session counts. */
#include <stdio.h>

#include "common/metrics.h"
#include "rdmafe/rdmafe.h"

static void gauge(buf_t *out, const char *name, const char *help, uint64_t v)
{
    metrics_write_single(out, name, "gauge", help, v);
}

static void counter(buf_t *out, const char *name, const char *help, uint64_t v)
{
    metrics_write_single(out, name, "counter", help, v);
}

static void report_metrics(void *ctx, buf_t *out)
{
    rdma_server_t *rdma = ctx;
    rdma_server_stats_t rs = {0};
    if (rdma)
        rdma_server_get_stats(rdma, &rs);
    gauge(out, "s3rdma_rdma_enabled", "1 when the RDMA session port is up.", rdma != NULL);
    gauge(out, "s3rdma_rdma_sessions", "RDMA sessions live now.", rs.sessions);
    counter(out, "s3rdma_rdma_sessions_opened_total", "RDMA sessions opened.", rs.sessions_opened);
    gauge(out, "s3rdma_rdma_sessions_closing",
          "RDMA sessions closed whose endpoint waits for requests stalled on a live connection.",
          rs.sessions_closing);
    metrics_write_family(out, "s3rdma_rdma_sessions_refused_total", "counter",
                         "Session-port connections that ended before becoming a session, by "
                         "reason.");
    for (int r = 0; r < RDMA_REFUSED_COUNT; r++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "reason=\"%s\"", rdma_refusal_name((rdma_refusal_t)r));
        metrics_write_sample(out, "s3rdma_rdma_sessions_refused_total", labels, rs.refused[r]);
    }
    gauge(out, "s3rdma_rdma_transfers_in_flight", "RDMA transfers (token and native) in flight.",
          rs.transfers_inflight);
    gauge(out, "s3rdma_rdma_staging_chunks_busy",
          "Staging chunks out of the pool (quarantined ones included).", rs.staging_busy);
    gauge(out, "s3rdma_rdma_staging_chunks_quarantined",
          "Staging chunks an RDMA operation of a session now gone may still complete into.",
          rs.staging_quarantined);
    counter(out, "s3rdma_rdma_transfers_stalled_total",
            "RDMA transfers failed for making no progress for rdma.stall_ms.",
            rs.transfers_stalled);
    metrics_write_family(out, "s3rdma_rdma_bytes_total", "counter",
                         "Bytes RDMA transfers moved, by path: in place in a client region "
                         "mapped into the server, or through staging chunks and UCX RMA.");
    metrics_write_sample(out, "s3rdma_rdma_bytes_total", "path=\"mapped\"", rs.bytes_mapped);
    metrics_write_sample(out, "s3rdma_rdma_bytes_total", "path=\"staged\"", rs.bytes_staged);
    gauge(out, "s3rdma_native_requests_in_flight", "Native requests admitted, not yet answered.",
          rs.native_inflight);
    gauge(out, "s3rdma_native_replies_sending", "Native replies UCX is still sending.",
          rs.native_sending);
    gauge(out, "s3rdma_native_replies_sending_bytes",
          "Bytes of the native replies UCX is still sending.", rs.native_sending_bytes);
    counter(out, "s3rdma_native_messages_dropped_total",
            "Native messages dropped with nobody to answer.", rs.native_dropped);
    counter(out, "s3rdma_native_requests_malformed_total",
            "Malformed native requests answered with an error.", rs.native_malformed);
}

static void report_stats(void *ctx, s3_rdma_stats_t *st)
{
    rdma_server_t *rdma = ctx;
    *st = (s3_rdma_stats_t){.enabled = rdma != NULL};
    if (!rdma)
        return;
    st->sessions = rdma_server_session_count(rdma);
    rdma_server_native_counts(rdma, &st->native_dropped, &st->native_malformed);
}

void rdmafe_report_init(s3_rdma_report_t *r, rdma_server_t *rdma)
{
    *r = (s3_rdma_report_t){.ctx = rdma, .metrics = report_metrics, .stats = report_stats};
}
