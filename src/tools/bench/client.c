/* s3rdma-bench's clients (client.h). */
#include "tools/bench/client.h"

#include <stdio.h>

void bench_client_error(s3r_client_t *c, const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(c, &e) == S3R_OK && e.status == st)
        fprintf(stderr, "s3rdma-bench: %s: %s (%s; HTTP %d %s %s; via %s)\n", what,
                s3r_strerror(st), s3r_status_name(st), e.http_status, e.code, e.message,
                s3r_transport_name(e.transport));
    else
        fprintf(stderr, "s3rdma-bench: %s: %s (%s)\n", what, s3r_strerror(st), s3r_status_name(st));
}

int bench_client_make(const bench_opts_t *o, int setup, s3r_client_t **c_p)
{
    s3r_config_t cfg;
    bench_opts_config(o, &cfg);
    if (setup) {
        cfg.transport = S3R_TRANSPORT_HTTP;
        cfg.use_rdma = 0;
    }
    s3r_status_t st = s3r_client_create(&cfg, c_p);
    if (st != S3R_OK) {
        s3r_error_info_t e;
        fprintf(stderr, "s3rdma-bench: cannot create the client: %s (%s)\n", s3r_strerror(st),
                s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : "");
        return 1;
    }
    if (setup || !o->use_rdma || o->transport == S3R_TRANSPORT_HTTP)
        return 0;
    st = s3r_client_rdma_connect(*c_p);
    if (st != S3R_OK && !o->rdma_fallback) {
        bench_client_error(
            *c_p, "RDMA session (--rdma-fallback is off; s3rdma-bench verify explains)", st);
        return 1;
    }
    return 0;
}
