/* The server's own pages beside S3: /health/live and /health/ready,
 * /metrics and /_s3rdma/stats. Which URL names one, and who may ask, is
 * routing's (http_router.c, http_frontend.c); the replies are here. */
#ifndef S3R_HTTP_OWN_H
#define S3R_HTTP_OWN_H

#include "s3/s3_request.h"

#define HTTP_OWN_STATS_PATH    "/_s3rdma/stats"
#define HTTP_OWN_METRICS_PATH  "/metrics"
#define HTTP_OWN_HEALTH_PREFIX "/health/"
#define HTTP_OWN_HEALTH_LIVE   HTTP_OWN_HEALTH_PREFIX "live"
#define HTTP_OWN_HEALTH_READY  HTTP_OWN_HEALTH_PREFIX "ready"

/* /health/live: 200 while the process serves HTTP. /health/ready: 200 when
 * every listener is up (s3_server_set_ready), the server is not stopping
 * and the store is ready (stor_ready); 503 otherwise. No authentication. */
void http_own_reply_health(s3_req_t *req, const char *url);

/* GET /metrics: public, or with Authorization: Bearer <metrics.token>
 * (anything else: 403 AccessDenied). */
void http_own_reply_metrics(s3_req_t *req);

/* GET /_s3rdma/stats: the server's counters as one JSON object. The caller
 * has authenticated a configured user. */
void http_own_reply_stats(s3_req_t *req);

#endif
