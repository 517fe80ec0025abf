/* The checks of s3rdma-bench verify (verify.h).
 *
 * UCX's own view of the host (its transports and devices) comes from
 * running `ucx_info -d`: it is UCX's tool for exactly this, reports what a
 * fresh UCX context sees under the caller's UCX_* environment, and keeps a
 * diagnostics-only enumeration (UCT memory domains and their transports)
 * out of libs3rdma's API. What only the library knows — the UCX version it
 * runs on and the transports a real session uses — comes from
 * s3r_client_rdma_info(). */
#include "tools/bench/verify.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tools/bench/payload.h"

typedef struct tally {
    int fails, warns;
} tally_t;

static void check(tally_t *t, const char *level, const char *remedy, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void check(tally_t *t, const char *level, const char *remedy, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%-4s  ", level);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (remedy && strcmp(level, "PASS") != 0)
        printf("      remedy: %s\n", remedy);
    t->fails += strcmp(level, "FAIL") == 0;
    t->warns += strcmp(level, "WARN") == 0;
}

/* ---- The host -------------------------------------------------------------- */

static void check_ucx(tally_t *t)
{
    s3r_rdma_info_t info;
    s3r_client_rdma_info(NULL, &info);
    check(t, "PASS", NULL, "UCX %s (the library libs3rdma runs on)", info.ucx_version);

    /* "#      Transport: posix" followed by "#         Device: memory" */
    FILE *p = popen("ucx_info -d 2>/dev/null", "r");
    char line[512], tl[64] = "", seen[2048] = "";
    size_t used = 0;
    int rdma_nic = 0;
    while (p && fgets(line, sizeof line, p)) {
        char *v;
        if ((v = strstr(line, "Transport: ")) != NULL) {
            sscanf(v + 11, "%63s", tl);
        } else if ((v = strstr(line, "Device: ")) != NULL && tl[0]) {
            char dev[64] = "", item[140];
            sscanf(v + 8, "%63s", dev);
            snprintf(item, sizeof item, "%s/%s", tl, dev);
            rdma_nic |=
                strncmp(tl, "rc", 2) == 0 || strncmp(tl, "dc", 2) == 0 || strncmp(tl, "ud", 2) == 0;
            if (used + strlen(item) + 3 < sizeof seen)
                used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%s", used ? ", " : "",
                                         item);
        }
    }
    int rc = p ? pclose(p) : -1;
    if (rc != 0 || used == 0)
        check(t, "WARN", "apt-get install ucx-utils (it provides ucx_info)",
              "UCX transports: cannot ask ucx_info -d (not installed or failed)");
    else
        check(t, "PASS", NULL, "UCX transports/devices: %s%s", seen,
              rdma_nic ? "" : " (no RDMA NIC transport: shared memory, CMA and TCP only)");
}

static void check_devices(tally_t *t)
{
    int n = 0;
    DIR *d = opendir("/dev/infiniband");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, "uverbs", 6) == 0;
    if (d)
        closedir(d);
    if (n)
        check(t, "PASS", NULL, "RDMA devices: %d uverbs device(s) in /dev/infiniband", n);
    else
        check(t, "WARN",
              "for an RDMA NIC: its driver, rdma-core and ibverbs-providers (apt-get install "
              "rdma-core "
              "ibverbs-providers), and the ib_uverbs module; without one UCX uses shared memory, "
              "CMA and TCP",
              "RDMA devices: none in /dev/infiniband");
    void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        check(t, "PASS", NULL, "libibverbs: present");
    } else {
        check(t, "WARN",
              "apt-get install libibverbs1 ibverbs-providers (needed for RDMA NICs only)",
              "libibverbs: not found");
    }
}

static void check_limits(tally_t *t)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY) {
        check(t, "PASS", NULL, "locked-memory limit: unlimited");
    } else if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        const char *lvl = rl.rlim_cur >= (64u << 20) ? "PASS" : "WARN";
        check(t, lvl,
              "RDMA NICs pin registered memory: ulimit -l unlimited, or memlock in "
              "/etc/security/limits.conf (LimitMEMLOCK=infinity for a systemd service)",
              "locked-memory limit: %llu KiB", (unsigned long long)(rl.rlim_cur >> 10));
    }
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = -1;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = -1;
        fclose(f);
    }
    if (!f)
        check(t, "PASS", NULL,
              "CMA: no Yama ptrace restrictions (process_vm_readv allowed for the same uid)");
    else if (scope == 0)
        check(t, "PASS", NULL,
              "CMA: kernel.yama.ptrace_scope = 0 (process_vm_readv allowed for the same uid)");
    else
        check(t, "WARN",
              "sysctl -w kernel.yama.ptrace_scope=0 (persist it in /etc/sysctl.d/); UCX otherwise "
              "uses other "
              "transports between unrelated processes",
              "CMA: kernel.yama.ptrace_scope = %d refuses process_vm_readv between unrelated "
              "processes",
              scope);
}

/* ---- The endpoints ------------------------------------------------------------- */

static void client_error(s3r_client_t *c, s3r_status_t st, char *out, size_t len)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(c, &e) == S3R_OK && e.message[0])
        snprintf(out, len, "%s: %s%s%s", s3r_strerror(st), e.code, e.code[0] ? " " : "", e.message);
    else
        snprintf(out, len, "%s", s3r_strerror(st));
}

static s3r_client_t *client_for(const bench_opts_t *o, const char *endpoint,
                                const char *rdma_endpoint, s3r_transport_t t)
{
    s3r_config_t cfg;
    bench_opts_config(o, &cfg);
    cfg.endpoint = endpoint;
    cfg.rdma_endpoint = rdma_endpoint;
    cfg.transport = t;
    cfg.use_rdma = t != S3R_TRANSPORT_HTTP;
    cfg.rdma_fallback = 0;
    if (cfg.rdma_timeout_ms > 5000)
        cfg.rdma_timeout_ms = 5000; /* a check, not a run: do not hang 30 s */
    s3r_client_t *c = NULL;
    return s3r_client_create(&cfg, &c) == S3R_OK ? c : NULL;
}

/* Writes an object by token, reads it back by token and by native, checks
 * the bytes, deletes it. "" on success, else what failed in why. */
static void round_trip(const bench_opts_t *o, s3r_client_t *c, char *why, size_t len)
{
    const uint64_t size = 1u << 20;
    const char *key = "s3rdma-bench-verify";
    void *w = NULL, *r = NULL;
    why[0] = '\0';
    s3r_status_t st = s3r_bucket_create(c, o->bucket);
    if (st != S3R_OK && st != S3R_ERR_BUCKET_EXISTS)
        goto fail;
    if ((st = s3r_buf_alloc(c, size, &w)) != S3R_OK || (st = s3r_buf_alloc(c, size, &r)) != S3R_OK)
        goto fail;
    payload_body_t body;
    payload_body_init(&body, w, size, 42);
    payload_stamp(&body, w, size, key);
    s3r_put_opts_t po = {.transport = S3R_TRANSPORT_TOKEN};
    if ((st = s3r_object_put(c, o->bucket, key, w, size, &po)) != S3R_OK)
        goto fail;
    static const s3r_transport_t gets[] = {S3R_TRANSPORT_TOKEN, S3R_TRANSPORT_NATIVE};
    for (size_t i = 0; i < 2; i++) {
        s3r_get_opts_t go = {.transport = gets[i]};
        uint64_t n = 0;
        memset(r, 0, size);
        if ((st = s3r_object_get(c, o->bucket, key, r, size, &go, &n)) != S3R_OK)
            goto fail;
        if (payload_verify(r, n, key) != PAYLOAD_OK) {
            snprintf(why, len, "GET by %s returned other bytes than were written",
                     s3r_transport_name(gets[i]));
            goto out;
        }
    }
    s3r_stats_t s;
    s3r_client_stats(c, &s);
    if (s.token_ops < 2 || s.native_ops < 1 || s.http_ops > 0)
        snprintf(why, len,
                 "the transfers did not all travel by RDMA (token %llu, native %llu, http %llu)",
                 (unsigned long long)s.token_ops, (unsigned long long)s.native_ops,
                 (unsigned long long)s.http_ops);
    st = s3r_object_delete(c, o->bucket, key);
    if (st == S3R_OK)
        goto out;
fail:
    client_error(c, st, why, len);
out:
    s3r_buf_free(c, w);
    s3r_buf_free(c, r);
}

static void check_endpoint(tally_t *t, const bench_opts_t *o, const char *ep, const char *rep)
{
    char why[700];
    s3r_client_t *h = client_for(o, ep, rep, S3R_TRANSPORT_HTTP);
    if (!h) {
        check(t, "FAIL", "give --endpoints host:port[,...]", "%s: not a usable endpoint", ep);
        return;
    }
    s3r_bucket_list_t *bl = NULL;
    s3r_status_t st = s3r_bucket_list(h, &bl);
    s3r_bucket_list_free(bl);
    if (st != S3R_OK && st != S3R_ERR_ACCESS_DENIED) {
        client_error(h, st, why, sizeof why);
        check(t, "FAIL", "start s3rdmad there (make run), or point --endpoints at it",
              "%s: HTTP not reachable (%s)", ep, why);
        s3r_client_destroy(h);
        return;
    }
    check(t, "PASS", NULL, "%s: HTTP reachable", ep);
    if (st == S3R_ERR_ACCESS_DENIED) {
        client_error(h, st, why, sizeof why);
        check(t, "FAIL",
              "use a key pair the server knows (its config's users, or data/.s3rdma/credentials "
              "for make run)",
              "%s: credentials refused (%s)", ep, why);
    } else {
        check(t, "PASS", NULL, "%s: credentials accepted (access key %s)", ep,
              o->aws_credentials ? "of the AWS profile" : o->access_key);
    }
    s3r_client_destroy(h);
    if (st != S3R_OK)
        return;

    /* RDMA: failures are FAILs when --use-rdma asked for it, else WARNs. */
    const char *bad = o->use_rdma ? "FAIL" : "WARN";
    s3r_client_t *c = client_for(o, ep, rep, S3R_TRANSPORT_NATIVE);
    if (!c)
        return;
    st = s3r_client_rdma_connect(c);
    if (st != S3R_OK) {
        client_error(c, st, why, sizeof why);
        check(t, bad,
              "enable RDMA on the server (rdma.enabled: true, rdma.listen HOST:PORT) and open that "
              "port, or give "
              "--rdma-endpoint HOST:PORT",
              "%s: RDMA session port %s not usable (%s)", ep,
              rep ? rep : "(the endpoint's host, port 9100)", why);
        s3r_client_destroy(c);
        return;
    }
    s3r_rdma_info_t info;
    s3r_client_rdma_info(c, &info);
    check(t, "PASS", NULL, "%s: RDMA session open and authenticated (UCX transports %s)", ep,
          info.transports);
    round_trip(o, c, why, sizeof why);
    if (why[0])
        check(t, bad, "see the server's log; s3rdmad --log-level debug shows the transfer",
              "%s: RDMA round trip failed: %s", ep, why);
    else
        check(t, "PASS", NULL,
              "%s: RDMA round trip: 1 MiB PUT by token, GET by token and native, bytes verified, "
              "over UCX %s",
              ep, info.transports);
    if (!why[0] && info.tcp_only)
        check(t, "WARN",
              "same host: run the client as a uid the server trusts over its Unix socket "
              "(docs/security.md); "
              "across hosts: an RDMA NIC",
              "%s: UCX moves these bytes over TCP (emulated RDMA is slower than HTTP)", ep);
    s3r_client_destroy(c);
}

/* The i-th item of a comma list, into out; NULL when there is none. */
static const char *nth(const char *list, int i, char *out, size_t len)
{
    for (const char *p = list; p; i--) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (i == 0) {
            snprintf(out, len, "%.*s", (int)n, p);
            return out;
        }
        p = c ? c + 1 : NULL;
    }
    return NULL;
}

int bench_verify(const bench_opts_t *o)
{
    tally_t t = {0};
    check_ucx(&t);
    check_devices(&t);
    check_limits(&t);
    char ep[512], rep[512];
    for (int i = 0; nth(o->endpoints, i, ep, sizeof ep); i++)
        check_endpoint(&t, o, ep,
                       o->rdma_endpoint ? nth(o->rdma_endpoint, i, rep, sizeof rep) : NULL);
    printf("%s: %d failure(s), %d warning(s)\n", t.fails ? "FAIL" : "PASS", t.fails, t.warns);
    return t.fails ? 1 : 0;
}
