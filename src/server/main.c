/* s3rdmad: composes the storage engine, the RDMA session layer and the S3
 * HTTP frontend, then waits for SIGTERM/SIGINT and shuts down in order. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3rdma.h" /* the version */

#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_server.h"
#include "server/access_log.h"
#include "server/ucx_guard.h"
#include "http/http_server.h"
#include "rdmafe/rdmafe.h"
#include "s3/s3_server.h"
#include "s3/sse.h"
#include "server/config.h"
#include "storage/storage.h"

#define CREDENTIALS_FILE ".s3rdma/credentials"
#define MASTER_KEY_FILE  ".s3rdma/sse-master.key"

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
    if (hash_random_bytes(rnd, sizeof(rnd)) != 0)
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

static bool any_address(const char *host)
{
    return !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* Starts the RDMA session server on cfg's address; *rdma_p stays NULL when
 * it could not start. */
static int start_rdma(server_config_t *cfg, const server_addr_t *at, rdma_server_t **rdma_p)
{
    rdma_server_config_t rc_cfg;
    rdma_server_config_defaults(&rc_cfg);
    rc_cfg.listen_host = at->host;
    rc_cfg.port = at->port;
    rc_cfg.n_workers = (int)cfg->rdma.workers;
    rc_cfg.max_sessions = cfg->rdma.max_sessions;
    rc_cfg.net_sessions = ucx_guard_active();
    if (!rc_cfg.net_sessions)
        log_error("rdma: this libucp's software-RMA handlers cannot be replaced (UCX changed?); "
                  "serving trusted local sessions only (docs/security.md)");
    rc_cfg.max_sessions_per_user = cfg->rdma.max_sessions_per_user;
    rc_cfg.max_pending = cfg->rdma.max_pending;
    rc_cfg.max_pending_per_source = cfg->rdma.max_pending_per_source;
    rc_cfg.native_threads = cfg->rdma.native_threads;
    rc_cfg.max_native_per_session = cfg->rdma.max_native_per_session;
    rc_cfg.max_native_queued = cfg->rdma.max_native;
    rc_cfg.user_share = cfg->rdma.user_share;
    rc_cfg.stall_ms = cfg->rdma.stall_ms;
    rc_cfg.poll = cfg->rdma.poll == SERVER_RDMA_POLL_BUSY ? RDMA_POLL_BUSY : RDMA_POLL_ADAPTIVE;
    rc_cfg.slice_us = cfg->rdma.slice_us;
    rc_cfg.priority = cfg->rdma.priority;
    /* Small PUTs wait for no disk only in relaxed mode on local files: then
     * they may run on the progress threads (docs/protocol.md §4.5). */
    if (cfg->durability == SERVER_DURABILITY_RELAXED &&
        cfg->storage.backend != SERVER_STORAGE_RADOS)
        rc_cfg.local_put_max = S3R_NATIVE_LOCAL_PUT_MAX;
    if (strcmp(cfg->rdma.socket, "off") == 0)
        rc_cfg.unix_socket = "";
    else if (*cfg->rdma.socket)
        rc_cfg.unix_socket = cfg->rdma.socket;
    rc_cfg.trusted_uids = cfg->rdma.trusted_uids;
    rc_cfg.n_trusted_uids = (unsigned)cfg->rdma.n_trusted_uids;
    rc_cfg.staging_bytes = (size_t)cfg->rdma.staging;
    rc_cfg.chunk_bytes = (size_t)cfg->rdma.chunk;
    rc_cfg.lookup_secret = lookup_secret;
    rc_cfg.lookup_ctx = cfg;
    return rdma_server_start(&rc_cfg, rdma_p);
}

/* The embedded default (no users configured, local files) also gets an
 * SSE-S3 master key of its own, made on first start in the data directory,
 * so SSE-S3 and PutBucketEncryption work from the first start as in S3:
 * encryption at rest as clients see it, not protection of the data
 * directory (the key lies beside the data). A deployment names its own
 * sse.master_key_file, kept apart. Writes the file's path to path. */
static int local_master_key(const server_config_t *cfg, char *path, size_t cap)
{
    snprintf(path, cap, "%s/" MASTER_KEY_FILE, cfg->data_dir);
    if (access(path, F_OK) == 0)
        return 0;
    uint8_t key[32];
    if (hash_random_bytes(key, sizeof(key)) != 0)
        return -1;
    char text[200];
    int n = snprintf(text, sizeof(text),
                     "# SSE-S3 master key of the embedded default (docs/storage.md)\n");
    for (size_t i = 0; i < sizeof(key); i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%02x", key[i]);
    text[n++] = '\n';
    cipher_secure_zero(key, sizeof(key));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    int rc = fd >= 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0 ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "s3rdmad: cannot write %s: %s\n", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    cipher_secure_zero(text, sizeof(text));
    return rc;
}

static void print_banner(const server_config_t *cfg, const s3_server_config_t *scfg,
                         const rdma_server_t *rdma, const server_addr_t *rdma_at, int local_creds,
                         int created, const char *local_key)
{
    char http_ep[300] = "", https_ep[300] = "", rdma_ep[300];
    if (!cfg->listen.off)
        server_addr_format(&cfg->listen, http_ep, sizeof(http_ep));
    if (scfg->tls_cert_path)
        server_addr_format(&cfg->tls.listen, https_ep, sizeof(https_ep));
    server_addr_format(rdma_at, rdma_ep, sizeof(rdma_ep));
    /* The URL a local client can use: plain HTTP when on, else HTTPS. */
    char url[320];
    snprintf(url, sizeof(url), "%s://%s", *http_ep ? "http" : "https",
             *http_ep ? http_ep : https_ep);

    printf("s3rdmad %s is serving S3\n", S3RDMA_VERSION_STRING);
    if (*http_ep)
        printf("  endpoint:    http://%s%s\n", http_ep,
               *cfg->listen.host ? "" : " (listening on every address)");
    else
        printf("  endpoint:    plain HTTP off (listen: off)\n");
    if (*https_ep)
        printf("  https:       https://%s%s (certificate %s; SIGHUP reloads it)\n", https_ep,
               *cfg->tls.listen.host ? "" : " (listening on every address)", cfg->tls.cert);
    if (rdma)
        printf("  rdma:        %s (UCX session port: native requests and x-amz-rdma-token)\n",
               rdma_ep);
    if (rdma && rdma_server_unix_socket(rdma))
        printf("  local rdma:  unix socket %s (shared memory for uid %u and "
               "rdma.trusted_uids)\n",
               rdma_server_unix_socket(rdma), (unsigned)geteuid());
    else if (!rdma)
        printf("  rdma:        off\n");
    if (cfg->storage.backend == SERVER_STORAGE_RADOS)
        printf("  data:        RADOS pool %s (%s)\n", cfg->storage.rados.pool,
               *cfg->storage.rados.conf ? cfg->storage.rados.conf : "default ceph.conf");
    else
        printf("  data:        %s (durability %s)\n", cfg->data_dir,
               cfg->durability == SERVER_DURABILITY_RELAXED ? "relaxed" : "fsync");
    if (local_creds) {
        printf("  credentials: %s %s/%s\n", created ? "created in" : "from", cfg->data_dir,
               CREDENTIALS_FILE);
        printf("  access key:  %s\n  secret key:  %s\n", cfg->users[0].access_key,
               cfg->users[0].secret_key);
        if (*local_key)
            printf("  sse-s3 key:  %s (beside the data: a deployment sets "
                   "sse.master_key_file)\n",
                   local_key);
        printf("\ntry it:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s \\\n"
               "    aws --endpoint-url %s --region %s s3 mb s3://demo\n",
               cfg->users[0].access_key, cfg->users[0].secret_key, url, cfg->region);
        if (rdma)
            printf("and over RDMA (the native protocol), with the s3rdma CLI:\n"
                   "  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s \\\n"
                   "    build/s3rdma --endpoint %s --rdma-endpoint %s --transport native \\\n"
                   "    put README.md s3://demo/readme\n",
                   cfg->users[0].access_key, cfg->users[0].secret_key, url, rdma_ep);
    } else {
        printf("  users:      ");
        for (size_t i = 0; i < cfg->n_users; i++)
            printf(" %s", cfg->users[i].access_key);
        printf("\n\ntry it:\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=<secret> \\\n"
               "    aws --endpoint-url %s --region %s s3 ls\n",
               cfg->users[0].access_key, url, cfg->region);
    }
    printf("\nCtrl-C stops it; SIGHUP reloads the TLS certificate.\n");
    fflush(stdout);
}

static stor_rados_conf_t rados_conf_of(const server_config_t *cfg)
{
    return (stor_rados_conf_t){
        .conf = cfg->storage.rados.conf,
        .user = cfg->storage.rados.user,
        .keyring = cfg->storage.rados.keyring,
        .pool = cfg->storage.rados.pool,
        .index_pool = cfg->storage.rados.index_pool,
        .gc_grace_s = cfg->storage.rados.gc_grace_s,
        .op_timeout_s = cfg->storage.rados.op_timeout_s,
        .index_shards = cfg->storage.rados.index_shards,
        .lease_s = cfg->storage.rados.lease_s,
        .full_sweep = cfg->storage.rados.full_sweep,
        .crash_at = cfg->storage.rados.crash_at,
        .sweep_page_ms = cfg->storage.rados.sweep_page_ms,
    };
}

/* s3rdmad reshard BUCKET SHARDS [options]: moves a RADOS bucket's index to
 * SHARDS objects while gateways serve it (the same options as the server's,
 * for the cluster), or finishes a reshard of it that was interrupted. An
 * operator's command, not a gateway's job: docs/operations.md says when. */
static int reshard_command(int argc, char **argv)
{
    char *end = NULL;
    unsigned long shards = argc >= 4 ? strtoul(argv[3], &end, 10) : 0;
    if (argc < 4 || !end || *end || shards < 1 || shards > STOR_INDEX_SHARDS_MAX) {
        fprintf(stderr, "usage: s3rdmad reshard BUCKET SHARDS [options] (SHARDS: 1 to %d; the "
                        "options name the RADOS cluster as the server's do)\n",
                STOR_INDEX_SHARDS_MAX);
        return 2;
    }
    const char *bucket = argv[2];
    argv[3] = argv[0];
    server_config_t cfg;
    int rc = server_config_load(&cfg, argc - 3, argv + 3);
    if (rc != 0) {
        server_config_free(&cfg);
        return rc > 0 ? 0 : 2;
    }
    log_set_level(cfg.log_level);
    if (cfg.storage.backend != SERVER_STORAGE_RADOS) {
        fprintf(stderr, "s3rdmad reshard: only RADOS buckets have index shards "
                        "(storage.backend: rados)\n");
        server_config_free(&cfg);
        return 2;
    }
    stor_rados_conf_t rconf = rados_conf_of(&cfg);
    stor_t *store = NULL;
    stor_status_t st = stor_open_rados(&rconf, &store);
    if (st == STOR_OK) {
        st = stor_bucket_reshard(store, bucket, (uint32_t)shards);
        stor_close(store);
    }
    server_config_free(&cfg);
    if (st != STOR_OK) {
        fprintf(stderr, "s3rdmad reshard %s: %s%s\n", bucket, stor_strerror(st),
                st == STOR_ERR_PRECONDITION ? " (another process is resharding it)" : "");
        return 1;
    }
    printf("bucket %s: index on %lu shards\n", bucket, shards);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "reshard") == 0)
        return reshard_command(argc, argv);
    server_config_t cfg;
    int rc = server_config_load(&cfg, argc, argv);
    if (rc != 0) {
        server_config_free(&cfg);
        return rc > 0 ? 0 : 2;
    }
    log_set_level(cfg.log_level);
    raise_fd_limit(cfg.http.max_connections);

    /* Signals are taken by sigwait() below; every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* The local store's pool of free files holds a write lease for an
     * instant (storage.md, "The pool of free files"): a process outside the
     * server that opened a pooled file then would break it with SIGIO, whose
     * default action ends the process. The store needs no notice of it. */
    signal(SIGIO, SIG_IGN);

    int created = 0;
    int local_creds = cfg.n_users == 0;
    if (local_creds && local_credentials(&cfg, &created) != 0) {
        server_config_free(&cfg);
        return 1;
    }

    /* SSE-S3 master keys: held for the server's life, zeroed at exit. */
    static s3_sse_keys_t sse_keys, kms_keys;
    char why[300], local_key[4096] = "";
    const char *master_key_file = cfg.sse.master_key_file;
    if (!*master_key_file && local_creds && cfg.storage.backend != SERVER_STORAGE_RADOS) {
        if (local_master_key(&cfg, local_key, sizeof local_key) != 0) {
            server_config_free(&cfg);
            return 1;
        }
        master_key_file = local_key;
    }
    if (*master_key_file &&
        s3_sse_keys_load(master_key_file, false, &sse_keys, why, sizeof why) != 0) {
        fprintf(stderr, "s3rdmad: %s: %s\n", *local_key ? local_key : "sse.master_key_file", why);
        server_config_free(&cfg);
        return 1;
    }
    if (*cfg.sse.kms_keyring_file &&
        s3_sse_keys_load(cfg.sse.kms_keyring_file, true, &kms_keys, why, sizeof why) != 0) {
        fprintf(stderr, "s3rdmad: sse.kms_keyring_file: %s\n", why);
        cipher_secure_zero(&sse_keys, sizeof sse_keys);
        cipher_secure_zero(&kms_keys, sizeof kms_keys);
        server_config_free(&cfg);
        return 1;
    }

    stor_t *store = NULL;
    stor_durability_t dur = cfg.durability == SERVER_DURABILITY_RELAXED ? STOR_DURABILITY_RELAXED
                                                                        : STOR_DURABILITY_FSYNC;
    stor_rados_conf_t rconf = rados_conf_of(&cfg);
    bool on_rados = cfg.storage.backend == SERVER_STORAGE_RADOS;
    stor_status_t st =
        on_rados ? stor_open_rados(&rconf, &store) : stor_open(cfg.data_dir, dur, &store);
    if (st != STOR_OK) {
        fprintf(stderr, "s3rdmad: cannot open the store in %s: %s\n",
                on_rados ? cfg.storage.rados.pool : cfg.data_dir, stor_strerror(st));
        server_config_free(&cfg);
        return 1;
    }
    stor_set_inline_max(store, (size_t)cfg.storage.inline_max);

    /* rdma.listen defaults to the first HTTP listener's host and rdma.port. */
    server_addr_t rdma_at = cfg.rdma.listen;
    if (!rdma_at.set) {
        rdma_at = cfg.listen.off ? cfg.tls.listen : cfg.listen;
        rdma_at.port = (int)cfg.rdma.port;
    }
    rdma_server_t *rdma = NULL;
    if (cfg.rdma.enabled) {
        if (start_rdma(&cfg, &rdma_at, &rdma) != 0) {
            char at[300];
            server_addr_format(&rdma_at, at, sizeof(at));
            rdma = NULL;
            if (cfg.rdma.required) {
                fprintf(stderr,
                        "s3rdmad: the RDMA session port %s could not be opened (see the log "
                        "above). Free the port or set rdma.listen; rdma.enabled: false serves "
                        "without RDMA, rdma.required: false serves HTTP only when the port "
                        "cannot open.\n",
                        at);
                stor_close(store);
                server_config_free(&cfg);
                return 1;
            }
            log_warn("the RDMA session port %s could not be opened; serving HTTP only "
                     "(rdma.required: false; token requests are declined with 501)",
                     at);
        } else {
            rdma_at.port = rdma_server_port(rdma);
        }
    }

    access_log_t *access = NULL;
    if (strcmp(cfg.log.access, "off") != 0 &&
        !(access = access_log_open(cfg.log.access, cfg.log.access_format == SERVER_LOG_COMMON
                                                       ? ACCESS_FORMAT_COMMON
                                                       : ACCESS_FORMAT_JSON))) {
        rdma_server_stop(rdma);
        stor_close(store);
        server_config_free(&cfg);
        return 1;
    }

    /* What x-s3rdma-rdma-endpoint names (docs/protocol.md §1). */
    char advertise[300] = "";
    int advertise_port = rdma_at.port;
    if (cfg.rdma.advertise.set) {
        advertise_port = cfg.rdma.advertise.port;
        if (*cfg.rdma.advertise.host)
            server_addr_format(&cfg.rdma.advertise, advertise, sizeof(advertise));
    } else if (!any_address(rdma_at.host)) {
        server_addr_format(&rdma_at, advertise, sizeof(advertise));
    }

    const char *domains[16];
    size_t n_domains = split_domains(cfg.domains, domains, 16);
    bool https = *cfg.tls.cert != '\0';
    s3_token_mover_t token_mover;
    rdmafe_token_mover_init(&token_mover, rdma);
    s3_rdma_report_t rdma_report;
    rdmafe_report_init(&rdma_report, rdma);
    s3_server_config_t scfg = {
        .http_off = cfg.listen.off,
        .listen_host = cfg.listen.host,
        .port = cfg.listen.port,
        .tls_cert_path = https ? cfg.tls.cert : NULL,
        .tls_key_path = https ? cfg.tls.key : NULL,
        .tls_host = cfg.tls.listen.host,
        .tls_port = cfg.tls.listen.port,
        .rdma_advertise = rdma ? advertise : NULL,
        .rdma_advertise_port = advertise_port,
        .peers = *cfg.peers ? cfg.peers : NULL,
        .region = cfg.region,
        .domains = domains,
        .max_buckets_per_user = cfg.max_buckets_per_user,
        .max_document_memory = cfg.max_document_memory,
        .etag_fast = cfg.etag == SERVER_ETAG_FAST,
        .signature_v2 = cfg.signature_v2,
        .sse_keys = sse_keys.n ? &sse_keys : NULL,
        .sse_kms_keys = kms_keys.n ? &kms_keys : NULL,
        .sse_c_plain = cfg.sse.c_over_plain,
        .lifecycle_day_s = cfg.lifecycle.day_seconds,
        .n_domains = n_domains,
        .users = cfg.users,
        .n_users = cfg.n_users,
        .store = store,
        .token_mover = rdma ? &token_mover : NULL,
        .rdma_report = &rdma_report,
        .max_connections = cfg.http.max_connections,
        .max_connections_per_ip = cfg.http.max_connections_per_ip,
        .idle_timeout_s = cfg.http.idle_timeout_s,
        .head_timeout_s = cfg.http.head_timeout_s,
        .min_body_rate = cfg.http.min_body_rate,
        .body_rate_window_s = cfg.http.body_rate_window_s,
        .metrics_enabled = cfg.metrics.enabled,
        .metrics_token = cfg.metrics.auth == SERVER_METRICS_BEARER ? cfg.metrics.token : NULL,
        .access_log = access ? access_log_write : NULL,
        .access_log_ctx = access,
    };
    s3_server_t *srv = http_server_start(&scfg);
    if (!srv) {
        access_log_close(access);
        rdma_server_stop(rdma);
        stor_close(store);
        server_config_free(&cfg);
        return 1;
    }
    if (rdma)
        rdma_server_set_native(rdma, rdmafe_native_handle, srv);
    s3_server_set_ready(srv, true);
    print_banner(&cfg, &scfg, rdma, &rdma_at, local_creds, created, local_key);

    int sig = 0;
    for (;;) {
        sigwait(&sigs, &sig);
        if (sig != SIGHUP)
            break;
        log_info("SIGHUP: reloading");
        http_server_reload_tls(srv);
        access_log_reopen(access);
    }
    log_info("signal %d: stopping (in-flight requests get up to %d s)", sig, S3R_SHUTDOWN_GRACE_S);
    if (rdma)
        rdma_server_set_native(rdma, NULL, NULL);
    http_server_stop(srv, S3R_SHUTDOWN_GRACE_S);
    rdma_server_stop(rdma);
    access_log_close(access); /* after both frontends: no request logs any more */
    stor_close(store);
    cipher_secure_zero(&sse_keys, sizeof sse_keys);
    server_config_free(&cfg);
    log_info("stopped");
    return 0;
}
