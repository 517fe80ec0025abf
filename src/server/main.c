/* s3rdmad: composes the storage engine, the RDMA session layer and the S3
 * HTTP frontend, then waits for SIGTERM/SIGINT and shuts down in order. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "common/size.h"
#include "rdma/rdma_server.h"
#include "server/ucx_guard.h"
#include "s3/s3_server.h"
#include "server/config.h"
#include "storage/storage.h"

#define CREDENTIALS_FILE ".s3rdma/credentials"

/* Loads DIR/.s3rdma/credentials, creating it with a random key pair the
 * first time. Sets *created_p when it was created now. */
static int local_credentials(server_config_t *cfg, int *created_p)
{
    char path[4096], dir[4096];
    snprintf(dir, sizeof(dir), "%s/.s3rdma", cfg->data_dir);
    snprintf(path, sizeof(path), "%s/" CREDENTIALS_FILE, cfg->data_dir);
    *created_p = 0;
    FILE *f = fopen(path, "r");
    char ak[400] = "", sk[400] = "";
    if (f) {
        char line[400];
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\r\n")] = '\0';
            if (strncmp(line, "access_key=", 11) == 0)
                snprintf(ak, sizeof(ak), "%s", line + 11);
            else if (strncmp(line, "secret_key=", 11) == 0)
                snprintf(sk, sizeof(sk), "%s", line + 11);
        }
        fclose(f);
        if (!*ak || !*sk) {
            fprintf(stderr, "s3rdmad: %s is malformed (need access_key= and secret_key= lines)\n",
                    path);
            return -1;
        }
        return server_config_add_user(cfg, ak, sk);
    }
    if (errno != ENOENT) {
        fprintf(stderr, "s3rdmad: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    /* Access keys in the AWS style: upper-case letters and digits. */
    static const char ak_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    static const char sk_chars[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint8_t rnd[60];
    if (random_bytes(rnd, sizeof(rnd)) != 0)
        return -1;
    memcpy(ak, "S3R", 3);
    for (int i = 0; i < 17; i++)
        ak[3 + i] = ak_chars[rnd[i] & 31];
    ak[20] = '\0';
    for (int i = 0; i < 40; i++)
        sk[i] = sk_chars[rnd[20 + i] & 63];
    sk[40] = '\0';
    mkdir(cfg->data_dir, 0755);
    mkdir(dir, 0700);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "s3rdmad: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    char text[1000];
    int n = snprintf(text, sizeof(text), "access_key=%s\nsecret_key=%s\n", ak, sk);
    if (write(fd, text, (size_t)n) != n || fsync(fd) != 0) {
        close(fd);
        fprintf(stderr, "s3rdmad: cannot write %s\n", path);
        return -1;
    }
    close(fd);
    *created_p = 1;
    return server_config_add_user(cfg, ak, sk);
}

static int lookup_secret(void *ctx, const char *access_key, char *secret, size_t max)
{
    const server_config_t *cfg = ctx;
    for (size_t i = 0; i < cfg->n_users; i++) {
        if (strcmp(cfg->users[i].access_key, access_key) == 0) {
            snprintf(secret, max, "%s", cfg->users[i].secret_key);
            return 0;
        }
    }
    return -1;
}

/* Splits the comma-separated domain list in place. */
static size_t split_domains(char *list, const char **out, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *d = strtok_r(list, ", ", &save); d && n < max;
         d = strtok_r(NULL, ", ", &save))
        out[n++] = d;
    return n;
}

/* Every HTTP connection holds a descriptor, and multipart objects hold one
 * per part while being read: the soft limit goes up to the hard one, and a
 * limit too low for http.max_connections is reported. */
static void raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_connections + 256)
        log_warn("only %llu file descriptors (ulimit -n) for http.max_connections %u: past "
                 "about %llu connections new ones wait to be accepted",
                 (unsigned long long)rl.rlim_cur, max_connections,
                 rl.rlim_cur > 256 ? (unsigned long long)rl.rlim_cur - 256 : 0ULL);
}

int main(int argc, char **argv)
{
    server_config_t cfg;
    int rc = server_config_load(&cfg, argc, argv);
    if (rc != 0) {
        server_config_free(&cfg);
        return rc > 0 ? 0 : 2;
    }
    log_set_level(log_level_parse(cfg.log_level)); /* validated by server_config_load */
    server_http_limits_t http;
    server_config_http(&cfg, &http); /* validated by server_config_load */
    raise_fd_limit(http.max_connections);

    /* Signals are taken by sigwait() below; every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int created = 0;
    int local_creds = cfg.n_users == 0;
    if (local_creds && local_credentials(&cfg, &created) != 0) {
        server_config_free(&cfg);
        return 1;
    }

    stor_t *store = NULL;
    stor_durability_t dur =
        strcmp(cfg.durability, "relaxed") == 0 ? STOR_DURABILITY_RELAXED : STOR_DURABILITY_FSYNC;
    stor_rados_conf_t rconf = {
        .conf = cfg.rados_conf,
        .user = cfg.rados_user,
        .keyring = cfg.rados_keyring,
        .pool = cfg.rados_pool,
        .index_pool = cfg.rados_index_pool,
        .gc_grace_s = (unsigned)strtoul(cfg.rados_gc_grace, NULL, 10),
        .op_timeout_s = (unsigned)strtoul(cfg.rados_op_timeout, NULL, 10),
    };
    int on_rados = strcmp(cfg.storage_backend, "rados") == 0;
    stor_status_t st =
        on_rados ? stor_open_rados(&rconf, &store) : stor_open(cfg.data_dir, dur, &store);
    if (st != STOR_OK) {
        fprintf(stderr, "s3rdmad: cannot open the store in %s: %s\n",
                on_rados ? cfg.rados_pool : cfg.data_dir, stor_strerror(st));
        server_config_free(&cfg);
        return 1;
    }

    char host[256];
    int port;
    server_parse_hostport(cfg.listen, host, sizeof(host), &port);

    rdma_server_t *rdma = NULL;
    char rdma_host[256] = "";
    int rdma_port = 9100;
    if (strcmp(cfg.rdma_enabled, "true") == 0) {
        if (*cfg.rdma_listen)
            server_parse_hostport(cfg.rdma_listen, rdma_host, sizeof(rdma_host), &rdma_port);
        else {
            snprintf(rdma_host, sizeof(rdma_host), "%s", host);
            rdma_port = atoi(cfg.rdma_port);
        }
        rdma_server_config_t rc_cfg;
        uint64_t staging, chunk;
        size_parse(cfg.rdma_staging, &staging); /* validated by server_config_load */
        size_parse(cfg.rdma_chunk, &chunk);
        rdma_server_config_defaults(&rc_cfg);
        rc_cfg.listen_host = rdma_host;
        rc_cfg.port = rdma_port;
        rc_cfg.n_workers = atoi(cfg.rdma_workers);
        rc_cfg.max_sessions = (unsigned)atoi(cfg.rdma_max_sessions);
        rc_cfg.net_sessions = ucx_guard_active();
        if (!rc_cfg.net_sessions)
            log_error(
                "rdma: this libucp's software-RMA handlers cannot be replaced (UCX changed?); "
                "serving trusted local sessions only (docs/security.md)");
        rc_cfg.max_sessions_per_user = (unsigned)atoi(cfg.rdma_max_sessions_per_user);
        rc_cfg.max_pending = (unsigned)atoi(cfg.rdma_max_pending);
        rc_cfg.max_pending_per_source = (unsigned)atoi(cfg.rdma_max_pending_per_source);
        rc_cfg.native_threads = (unsigned)atoi(cfg.rdma_native_threads);
        rc_cfg.max_native_per_session = (unsigned)atoi(cfg.rdma_max_native_per_session);
        rc_cfg.max_native_queued = (unsigned)atoi(cfg.rdma_max_native);
        if (strcmp(cfg.rdma_socket, "off") == 0)
            rc_cfg.unix_socket = "";
        else if (*cfg.rdma_socket)
            rc_cfg.unix_socket = cfg.rdma_socket;
        unsigned uids[SERVER_MAX_TRUSTED_UIDS];
        rc_cfg.trusted_uids = uids;
        rc_cfg.n_trusted_uids =
            (unsigned)server_parse_uids(cfg.rdma_trusted_uids, uids, SERVER_MAX_TRUSTED_UIDS);
        rc_cfg.staging_bytes = (size_t)staging;
        rc_cfg.chunk_bytes = (size_t)chunk;
        rc_cfg.lookup_secret = lookup_secret;
        rc_cfg.lookup_ctx = &cfg;
        if (rdma_server_start(&rc_cfg, &rdma) != 0) {
            log_error("the RDMA session port %s:%d could not start; serving HTTP only "
                      "(token requests are declined with 501)",
                      rdma_host, rdma_port);
            rdma = NULL;
        } else {
            rdma_port = rdma_server_port(rdma);
        }
    }

    const char *domains[16];
    size_t n_domains = split_domains(cfg.domains, domains, 16);
    s3_server_config_t scfg = {
        .listen_host = host,
        .port = port,
        .region = cfg.region,
        .domains = domains,
        .n_domains = n_domains,
        .users = cfg.users,
        .n_users = cfg.n_users,
        .store = store,
        .rdma = rdma,
        .max_connections = http.max_connections,
        .max_connections_per_ip = http.max_connections_per_ip,
        .idle_timeout_s = http.idle_timeout_s,
        .head_timeout_s = http.head_timeout_s,
        .min_body_rate = http.min_body_rate,
        .body_rate_window_s = http.body_rate_window_s,
    };
    s3_server_t *srv = s3_server_start(&scfg);
    if (!srv) {
        rdma_server_stop(rdma);
        stor_close(store);
        server_config_free(&cfg);
        return 1;
    }
    if (rdma)
        rdma_server_set_native(rdma, s3_native_handle, srv);

    const char *shown_host =
        strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ? "127.0.0.1" : host;
    printf("s3rdmad is serving S3\n");
    printf("  endpoint:    http://%s:%d\n", shown_host, port);
    if (rdma)
        printf("  rdma:        %s:%d (UCX session port: native requests and x-amz-rdma-token)\n",
               rdma_host, rdma_port);
    if (rdma && rdma_server_unix_socket(rdma))
        printf("  local rdma:  unix socket %s (shared memory for uid %u and "
               "rdma.trusted_uids)\n",
               rdma_server_unix_socket(rdma), (unsigned)geteuid());
    else
        printf("  rdma:        off\n");
    if (on_rados)
        printf("  data:        RADOS pool %s (%s)\n", cfg.rados_pool,
               *cfg.rados_conf ? cfg.rados_conf : "default ceph.conf");
    else
        printf("  data:        %s (durability %s)\n", cfg.data_dir, cfg.durability);
    if (local_creds) {
        printf("  credentials: %s %s/%s\n", created ? "created in" : "from", cfg.data_dir,
               CREDENTIALS_FILE);
        printf("  access key:  %s\n  secret key:  %s\n", cfg.users[0].access_key,
               cfg.users[0].secret_key);
        printf("\ntry it:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s \\\n"
               "    aws --endpoint-url http://%s:%d --region %s s3 mb s3://demo\n",
               cfg.users[0].access_key, cfg.users[0].secret_key, shown_host, port, cfg.region);
        if (rdma)
            printf("and over RDMA (the native protocol), with the s3rdma CLI:\n"
                   "  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s \\\n"
                   "    build/s3rdma --endpoint http://%s:%d --rdma-endpoint %s:%d --transport "
                   "native \\\n"
                   "    put README.md s3://demo/readme\n",
                   cfg.users[0].access_key, cfg.users[0].secret_key, shown_host, port,
                   strcmp(rdma_host, "0.0.0.0") == 0 ? "127.0.0.1" : rdma_host, rdma_port);
    } else {
        printf("  users:      ");
        for (size_t i = 0; i < cfg.n_users; i++)
            printf(" %s", cfg.users[i].access_key);
        printf("\n\ntry it:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=<secret> \\\n"
               "    aws --endpoint-url http://%s:%d --region %s s3 ls\n",
               cfg.users[0].access_key, shown_host, port, cfg.region);
    }
    printf("\nCtrl-C stops it.\n");
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    log_info("signal %d: stopping (in-flight requests get up to %d s)", sig, S3R_SHUTDOWN_GRACE_S);
    if (rdma)
        rdma_server_set_native(rdma, NULL, NULL);
    s3_server_stop(srv, S3R_SHUTDOWN_GRACE_S);
    rdma_server_stop(rdma);
    stor_close(store);
    server_config_free(&cfg);
    log_info("stopped");
    return 0;
}
