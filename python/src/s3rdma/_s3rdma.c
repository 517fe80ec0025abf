/* s3rdma._s3rdma: the CPython binding of libs3rdma (include/s3rdma.h).
 *
 * A thin layer: every method converts its arguments, releases the GIL for
 * the library call, and converts the result. All policy (transport
 * selection, fallback, multipart, retries of a lost session) stays in the
 * library; the Python package (s3rdma/client.py) builds the friendly API on
 * top. Failures raise the exception returned by the factory registered with
 * set_error_factory(), called with (status, status_name, description,
 * http_status, code, message, request_id, needed_bytes, transport).
 *
 * Lifetime: a Client may be closed while other threads are inside calls on
 * it, or while RegisteredBuffers from it are alive. The handle is destroyed
 * only when it is closed, no call is running and no buffer is left; every
 * counter below is touched with the GIL held, so no lock is needed. A
 * pointer into a Python object used while the GIL is released comes from an
 * object the call holds a reference to (its argument tuple, a tuple or
 * Py_buffer of its own), never from a container another thread may change;
 * calls on one Multipart are serialised by its lock (below). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <s3rdma.h>
#include <sys/mman.h>
#include <unistd.h>

static PyObject *error_factory; /* set_error_factory() */

/* Buffers: the library keeps caller buffers it registered for RDMA cached by
 * address until s3r_buf_unregister_range (include/s3rdma.h). Python may free a
 * bytearray or array right after a call and reuse its address, so every call
 * that took a caller buffer unregisters it before returning (a no-op for
 * memory from allocate_buffer, which stays registered: the zero-cost path). */

/* ======================================================================== */
/* Client                                                                    */
/* ======================================================================== */

#define POOL_BLOCKS    16
#define POOL_MAX_BYTES ((size_t)256 << 20) /* at most this much kept */
#define POOL_MIN_BLOCK ((size_t)64 << 10)  /* smaller blocks are freed at once */

typedef struct {
    PyObject_HEAD
    s3r_client_t *c;
    int closed;
    Py_ssize_t calls;   /* calls running with the GIL released */
    Py_ssize_t buffers; /* live RegisteredBuffers */
    /* Registered blocks of dead RegisteredBuffers kept for reuse: registering
     * memory costs far more than moving a MiB over it (python/README.md), and
     * get_object_numpy allocates one array per call. */
    struct {
        void *p;
        size_t len;
    } pool[POOL_BLOCKS];
    int npool;
    size_t pool_bytes;
    pid_t pool_pid;            /* the process whose blocks the pool holds */
    s3r_transport_t transport; /* the configured transport (get() decides by it) */
    /* get()'s first tries answered "buffer too small" and then redone: library
     * calls that failed, which stats() leaves out of "errors" (client_stats) */
    unsigned long long get_retries;
} ClientObject;

/* In a process forked from the one that filled the pool, its blocks are the
 * parent's session memory, mapped shared with the parent: handing one out
 * here would let both processes write it. The child forgets them
 * (libs3rdma keeps the memory mapped and registers nothing for it). */
static void pool_claim(ClientObject *self)
{
    if (self->pool_pid == getpid())
        return;
    for (int i = 0; i < self->npool; i++)
        s3r_buf_free(self->c, self->pool[i].p);
    self->npool = 0;
    self->pool_bytes = 0;
    self->pool_pid = getpid();
}

/* A registered block of at least n bytes into *p (its size into *cap): the
 * smallest pooled block that fits without wasting more than half, else a new
 * one (allocated with the GIL released). A call on c is running. */
static s3r_status_t pool_take(ClientObject *self, s3r_client_t *c, size_t n, void **p, size_t *cap)
{
    pool_claim(self);
    int best = -1;
    for (int i = 0; i < self->npool; i++)
        if (self->pool[i].len >= n && self->pool[i].len / 2 <= n &&
            (best < 0 || self->pool[i].len < self->pool[best].len))
            best = i;
    if (best >= 0) {
        *p = self->pool[best].p;
        *cap = self->pool[best].len;
        self->pool_bytes -= *cap;
        self->pool[best] = self->pool[--self->npool];
        return S3R_OK;
    }
    s3r_status_t st;
    *cap = n;
    Py_BEGIN_ALLOW_THREADS
    st = s3r_buf_alloc(c, n, p);
    Py_END_ALLOW_THREADS
    return st;
}

/* Keeps a block taken in process pid for reuse while the pool has room, else
 * frees it. The handle is alive (a call or a buffer is counted). */
static void pool_give(ClientObject *self, void *p, size_t cap, pid_t pid)
{
    pool_claim(self);
    if (!self->closed && pid == self->pool_pid && self->npool < POOL_BLOCKS &&
        cap >= POOL_MIN_BLOCK && self->pool_bytes + cap <= POOL_MAX_BYTES) {
        self->pool[self->npool].p = p;
        self->pool[self->npool++].len = cap;
        self->pool_bytes += cap;
    } else {
        s3r_buf_free(self->c, p);
    }
}

static void client_maybe_destroy(ClientObject *self)
{
    if (self->closed && self->calls == 0 && self->buffers == 0 && self->c != NULL) {
        s3r_client_t *c = self->c;
        self->c = NULL;
        for (int i = 0; i < self->npool; i++)
            s3r_buf_free(c, self->pool[i].p);
        self->npool = 0;
        self->pool_bytes = 0;
        Py_BEGIN_ALLOW_THREADS
        s3r_client_destroy(c);
        Py_END_ALLOW_THREADS
    }
}

/* Marks a call as running; NULL with ValueError when the client is closed. */
static s3r_client_t *call_begin(ClientObject *self)
{
    if (self->closed || self->c == NULL) {
        PyErr_SetString(PyExc_ValueError, "s3rdma: the client is closed");
        return NULL;
    }
    self->calls++;
    return self->c;
}

static void call_end(ClientObject *self)
{
    self->calls--;
    client_maybe_destroy(self);
}

/* Builds the exception for st from the thread's last error on c (or the
 * last create failure with c NULL). Always returns NULL. */
static PyObject *raise_status(s3r_client_t *c, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(c, &e) != S3R_OK || e.status != st) {
        memset(&e, 0, sizeof(e));
        e.status = st;
    }
    if (error_factory == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", s3r_strerror(st), e.message);
        return NULL;
    }
    PyObject *exc =
        PyObject_CallFunction(error_factory, "ississsKs", (int)st, s3r_status_name(st),
                              s3r_strerror(st), e.http_status, e.code, e.message, e.request_id,
                              (unsigned long long)e.needed_bytes, s3r_transport_name(e.transport));
    if (exc == NULL)
        return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static int parse_transport(PyObject *o, s3r_transport_t *t)
{
    if (o == NULL || o == Py_None) {
        *t = S3R_TRANSPORT_DEFAULT;
        return 0;
    }
    const char *s = PyUnicode_AsUTF8(o);
    if (s == NULL)
        return -1;
    if (strcmp(s, "default") == 0) {
        *t = S3R_TRANSPORT_DEFAULT;
        return 0;
    }
    if (s3r_transport_parse(s, t) != S3R_OK) {
        PyErr_Format(PyExc_ValueError, "s3rdma: unknown transport %R (http, token, native, auto)",
                     o);
        return -1;
    }
    return 0;
}

/* Optional string from a kwargs dict entry: NULL when absent or None. */
static int opt_str(PyObject *kw, const char *name, const char **out)
{
    *out = NULL;
    PyObject *v = kw ? PyDict_GetItemString(kw, name) : NULL;
    if (v == NULL || v == Py_None)
        return 0;
    if ((*out = PyUnicode_AsUTF8(v)) == NULL)
        return -1;
    return 0;
}

static int opt_u64(PyObject *kw, const char *name, uint64_t *out)
{
    PyObject *v = kw ? PyDict_GetItemString(kw, name) : NULL;
    if (v == NULL || v == Py_None)
        return 0;
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = x;
    return 0;
}

static int opt_int(PyObject *kw, const char *name, int *out)
{
    PyObject *v = kw ? PyDict_GetItemString(kw, name) : NULL;
    if (v == NULL || v == Py_None)
        return 0;
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = (int)x;
    return 0;
}

/* Client(**config): the keys are s3r_config_t's field names; None keeps
 * the library default. Unknown keys are a TypeError. */
static int client_init(ClientObject *self, PyObject *args, PyObject *kw)
{
    static const char *const known[] = {
        "endpoint",           "rdma_endpoint",   "access_key",
        "secret_key",         "region",          "transport",
        "rdma_threshold",     "rdma_fallback",   "rdma_device",
        "rdma_local_ip",      "rdma_log_level",  "rdma_timeout_ms",
        "use_rdma",           "part_size",       "multipart_threshold",
        "sign_payload_max",   "http_timeout_ms", "connect_timeout_ms",
        "max_cached_regions", "quiet",           "rdma_socket",
        "native_inline",      "ca_bundle",       "parts_in_flight",
        "peer_discovery",     "put_checksum",    "anonymous",
        "aws_credentials",    "aws_profile",     NULL};
    if (PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "Client() takes keyword arguments only");
        return -1;
    }
    if (self->c != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Client already initialised");
        return -1;
    }
    if (kw != NULL) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kw, &pos, &k, &v)) {
            const char *name = PyUnicode_AsUTF8(k);
            if (name == NULL)
                return -1;
            int ok = 0;
            for (int i = 0; known[i] != NULL; i++)
                ok |= strcmp(known[i], name) == 0;
            if (!ok) {
                PyErr_Format(PyExc_TypeError, "Client() got an unknown setting %R", k);
                return -1;
            }
        }
    }
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    long http_timeout = cfg.http_timeout_ms, connect_timeout = cfg.connect_timeout_ms;
    int max_regions = (int)cfg.max_cached_regions, parts = (int)cfg.parts_in_flight;
    uint64_t u;
    PyObject *t = kw ? PyDict_GetItemString(kw, "transport") : NULL;
    if (opt_str(kw, "endpoint", &cfg.endpoint) < 0 ||
        opt_str(kw, "rdma_endpoint", &cfg.rdma_endpoint) < 0 ||
        opt_str(kw, "access_key", &cfg.access_key) < 0 ||
        opt_str(kw, "secret_key", &cfg.secret_key) < 0 || opt_str(kw, "region", &cfg.region) < 0 ||
        opt_str(kw, "rdma_device", &cfg.rdma_device) < 0 ||
        opt_str(kw, "rdma_local_ip", &cfg.rdma_local_ip) < 0 ||
        opt_str(kw, "rdma_log_level", &cfg.rdma_log_level) < 0 ||
        opt_str(kw, "rdma_socket", &cfg.rdma_socket) < 0 ||
        opt_str(kw, "ca_bundle", &cfg.ca_bundle) < 0 ||
        opt_u64(kw, "rdma_threshold", &cfg.rdma_threshold) < 0 ||
        opt_int(kw, "rdma_fallback", &cfg.rdma_fallback) < 0 ||
        opt_int(kw, "rdma_timeout_ms", &cfg.rdma_timeout_ms) < 0 ||
        opt_int(kw, "use_rdma", &cfg.use_rdma) < 0 ||
        opt_u64(kw, "part_size", &cfg.part_size) < 0 ||
        opt_u64(kw, "multipart_threshold", &cfg.multipart_threshold) < 0 ||
        opt_u64(kw, "sign_payload_max", &cfg.sign_payload_max) < 0 ||
        opt_int(kw, "quiet", &cfg.quiet) < 0 ||
        opt_u64(kw, "native_inline", &cfg.native_inline) < 0 ||
        opt_int(kw, "max_cached_regions", &max_regions) < 0 ||
        opt_int(kw, "parts_in_flight", &parts) < 0 ||
        opt_int(kw, "peer_discovery", &cfg.peer_discovery) < 0 ||
        opt_int(kw, "put_checksum", &cfg.put_checksum) < 0 ||
        opt_int(kw, "anonymous", &cfg.anonymous) < 0 ||
        opt_int(kw, "aws_credentials", &cfg.aws_credentials) < 0 ||
        opt_str(kw, "aws_profile", &cfg.aws_profile) < 0)
        return -1;
    u = (uint64_t)http_timeout;
    if (opt_u64(kw, "http_timeout_ms", &u) < 0)
        return -1;
    cfg.http_timeout_ms = (long)u;
    u = (uint64_t)connect_timeout;
    if (opt_u64(kw, "connect_timeout_ms", &u) < 0)
        return -1;
    cfg.connect_timeout_ms = (long)u;
    cfg.max_cached_regions = (unsigned)max_regions;
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "s3rdma: parts_in_flight must be at least 1");
        return -1;
    }
    cfg.parts_in_flight = (unsigned)parts;
    if (parse_transport(t, &cfg.transport) < 0)
        return -1;
    if (cfg.transport == S3R_TRANSPORT_DEFAULT)
        cfg.transport = S3R_TRANSPORT_AUTO;
    s3r_client_t *c = NULL;
    s3r_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = s3r_client_create(&cfg, &c);
    Py_END_ALLOW_THREADS
    if (st != S3R_OK) {
        raise_status(NULL, st);
        return -1;
    }
    self->c = c;
    self->closed = 0;
    self->pool_pid = getpid();
    self->transport = cfg.transport;
    return 0;
}

static void client_dealloc(ClientObject *self)
{
    /* Buffers and running calls hold a reference, so both are 0 here. */
    self->closed = 1;
    client_maybe_destroy(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *client_close(ClientObject *self, PyObject *Py_UNUSED(a))
{
    self->closed = 1;
    client_maybe_destroy(self);
    Py_RETURN_NONE;
}

static PyObject *client_get_closed(ClientObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->closed);
}

/* Runs EXPR (an s3r_status_t expression using c) with the GIL released;
 * raises and returns NULL on error. */
#define CALL(self, st, EXPR)                                                                       \
    do {                                                                                           \
        s3r_client_t *c = call_begin(self);                                                        \
        if (c == NULL)                                                                             \
            return NULL;                                                                           \
        Py_INCREF(self);                                                                           \
        PyThreadState *ts_ = PyEval_SaveThread();                                                  \
        st = (EXPR);                                                                               \
        PyEval_RestoreThread(ts_);                                                                 \
        if (st != S3R_OK)                                                                          \
            raise_status(c, st);                                                                   \
        call_end(self);                                                                            \
        Py_DECREF(self);                                                                           \
        if (st != S3R_OK)                                                                          \
            return NULL;                                                                           \
    } while (0)

/* ---- Objects ------------------------------------------------------------ */

/* st; when it is S3R_OK, *vi gets the version the call wrote or removed
 * (s3r_client_last_version: the same thread, right after the call). */
static s3r_status_t with_version(s3r_client_t *c, s3r_status_t st, s3r_version_info_t *vi)
{
    if (st == S3R_OK && s3r_client_last_version(c, vi) != S3R_OK)
        memset(vi, 0, sizeof(*vi));
    return st;
}

/* The version id as a str, or None when the server named none. */
static PyObject *version_str(const s3r_version_info_t *vi)
{
    if (vi->version_id[0] == '\0')
        Py_RETURN_NONE;
    return PyUnicode_FromString(vi->version_id);
}

/* Asks for transparent huge pages over [p, p + n) (whole 2 MiB pages only),
 * before anything touches it: a fresh area the object's size is otherwise
 * faulted in 4 KiB at a time as the body arrives. */
static void huge_pages(char *p, uint64_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* A caller's buffer of at least this many bytes whose memory is not there yet (its
 * first whole 2 MiB page not resident: made for the call, as torch.empty's storage
 * is) is offered huge pages before a GET writes it, as NumPy does for its own arrays
 * of 4 MiB and more: it is then faulted in 2 MiB at a time instead of 4 KiB. Memory
 * already in use is left as it is (no mapping change, nothing for khugepaged). */
#define GET_INTO_HUGE ((Py_ssize_t)4 << 20)

static void huge_pages_if_fresh(char *p, uint64_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    unsigned char resident = 1;
    if (a + huge <= (uintptr_t)p + n && mincore((void *)a, 1, &resident) == 0 && !(resident & 1))
        huge_pages(p, n);
}

static PyObject *client_get_into(ClientObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"bucket", "key",       "buffer",     "start",
                          "length", "transport", "version_id", NULL};
    const char *bucket, *key, *vid = NULL;
    Py_buffer buf;
    unsigned long long start = 0, length = 0;
    PyObject *tr = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssw*|KKOz", kwl, &bucket, &key, &buf, &start,
                                     &length, &tr, &vid))
        return NULL;
    s3r_get_opts_t o = {.range_start = start, .range_len = length, .version_id = vid};
    if (parse_transport(tr, &o.transport) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    uint64_t n = 0;
    s3r_status_t st;
    s3r_client_t *c = call_begin(self);
    if (c == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    Py_INCREF(self);
    Py_BEGIN_ALLOW_THREADS
    if (buf.len >= GET_INTO_HUGE)
        huge_pages_if_fresh(buf.buf, (uint64_t)buf.len);
    st = s3r_object_get(c, bucket, key, buf.buf, (uint64_t)buf.len, &o, &n);
    s3r_buf_unregister_range(c, buf.buf, (size_t)buf.len);
    Py_END_ALLOW_THREADS
    if (st != S3R_OK)
        raise_status(c, st);
    call_end(self);
    Py_DECREF(self);
    PyBuffer_Release(&buf);
    if (st != S3R_OK)
        return NULL;
    return PyLong_FromUnsignedLongLong(n);
}

/* get(): a GET that may go over the native transport (native, or auto with a
 * session up on a transport other than TCP alone: what auto then picks) or
 * names its length first lands in a pooled registered block
 * of GET_FIRST_TRY bytes (libs3rdma's own scratch size), copied once into the
 * bytes object; a larger body (the buffer-too-small answer names its size,
 * before any byte moves) is fetched again straight into a bytes object of
 * that size (asked for in huge pages), so no other area the object's size is
 * written and the fresh one is faulted in 2 MiB at a time. A whole-object
 * GET over HTTP or the token path goes through s3r_object_get_sized: the
 * bytes object is made once the size is known (HTTP: from the response's
 * Content-Length, in the same request) and the body lands in it, no copy;
 * guessing a size there would cost HTTP a second request and a new
 * connection for every object past the guess. */
#define GET_FIRST_TRY ((size_t)1 << 20)
#define GET_TRIES     3 /* an object that grows between tries is asked for again */

/* get_sized's allocator: the bytes object the body lands in, made (with the
 * GIL, taken back for the purpose) once libs3rdma knows the body's size. */
typedef struct get_into_bytes {
    PyObject *bytes;
} get_into_bytes_t;

static void *bytes_alloc(void *arg, uint64_t size)
{
    get_into_bytes_t *g = arg;
    if (size > (uint64_t)PY_SSIZE_T_MAX)
        return NULL;
    PyGILState_STATE gs = PyGILState_Ensure();
    g->bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (g->bytes == NULL)
        PyErr_Clear(); /* reported as libs3rdma's S3R_ERR_NOMEM */
    else
        huge_pages(PyBytes_AS_STRING(g->bytes), size);
    PyGILState_Release(gs);
    return g->bytes ? PyBytes_AS_STRING(g->bytes) : NULL;
}

static PyObject *get_sized(s3r_client_t *c, const char *bucket, const char *key,
                           const s3r_get_opts_t *o)
{
    get_into_bytes_t g = {NULL};
    void *data = NULL;
    uint64_t n = 0;
    s3r_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = s3r_object_get_sized(c, bucket, key, o, bytes_alloc, &g, &data, &n);
    Py_END_ALLOW_THREADS
    if (st != S3R_OK) {
        Py_XDECREF(g.bytes);
        return raise_status(c, st);
    }
    if (n < (uint64_t)PyBytes_GET_SIZE(g.bytes))
        _PyBytes_Resize(&g.bytes, (Py_ssize_t)n); /* shrank between a HEAD and the GET */
    return g.bytes;
}

static PyObject *get_direct(ClientObject *self, s3r_client_t *c, const char *bucket,
                            const char *key, const s3r_get_opts_t *o)
{
    void *blk = NULL;
    size_t blk_cap = 0;
    pid_t pid = self->pool_pid;
    PyObject *b = NULL;
    s3r_status_t st = S3R_OK;
    if (o->range_len == 0 || o->range_len <= GET_FIRST_TRY) {
        st = pool_take(self, c, GET_FIRST_TRY, &blk, &blk_cap);
        pid = self->pool_pid;
        if (st != S3R_OK)
            return raise_status(c, st);
    } else if ((b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)o->range_len)) == NULL) {
        return NULL;
    } else {
        huge_pages(PyBytes_AS_STRING(b), o->range_len);
    }
    for (int tries = 1;; tries++) {
        char *dst = blk ? blk : PyBytes_AS_STRING(b);
        uint64_t cap = blk ? blk_cap : (uint64_t)PyBytes_GET_SIZE(b), n = 0;
        Py_BEGIN_ALLOW_THREADS
        st = s3r_object_get(c, bucket, key, dst, cap, o, &n);
        if (!blk)
            s3r_buf_unregister_range(c, dst, cap); /* the bytes object is about to be handed out */
        Py_END_ALLOW_THREADS
        if (st == S3R_OK && blk) {
            b = PyBytes_FromStringAndSize(blk, (Py_ssize_t)n);
        } else if (st == S3R_OK && n < cap) {
            _PyBytes_Resize(&b, (Py_ssize_t)n); /* a range past the end: fewer bytes */
        }
        if (st != S3R_OK) {
            s3r_error_info_t e;
            uint64_t need = 0;
            if (st == S3R_ERR_BUFFER_TOO_SMALL && s3r_client_last_error(c, &e) == S3R_OK)
                need = e.needed_bytes;
            if (need <= cap || tries == GET_TRIES || need > (uint64_t)PY_SSIZE_T_MAX) {
                raise_status(c, st);
                Py_CLEAR(b);
            } else {
                self->get_retries++;
                if (blk)
                    pool_give(self, blk, blk_cap, pid);
                blk = NULL;
                Py_XDECREF(b);
                if ((b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)need)) != NULL) {
                    huge_pages(PyBytes_AS_STRING(b), need);
                    continue;
                }
            }
        }
        break;
    }
    if (blk)
        pool_give(self, blk, blk_cap, pid);
    return b;
}

static PyObject *client_get(ClientObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"bucket", "key", "start", "length", "transport", "version_id", NULL};
    const char *bucket, *key, *vid = NULL;
    unsigned long long start = 0, length = 0;
    PyObject *tr = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|KKOz", kwl, &bucket, &key, &start, &length, &tr,
                                     &vid))
        return NULL;
    s3r_get_opts_t o = {.range_start = start, .range_len = length, .version_id = vid};
    if (parse_transport(tr, &o.transport) < 0)
        return NULL;
    s3r_client_t *c = call_begin(self);
    if (c == NULL)
        return NULL;
    Py_INCREF(self);
    s3r_transport_t t = o.transport == S3R_TRANSPORT_DEFAULT ? self->transport : o.transport;
    s3r_rdma_info_t ri;
    int direct = length > 0 || t == S3R_TRANSPORT_NATIVE ||
                 (t == S3R_TRANSPORT_AUTO && s3r_client_rdma_info(c, &ri) == S3R_OK &&
                  ri.transports[0] != '\0' && !ri.tcp_only);
    PyObject *r = direct ? get_direct(self, c, bucket, key, &o) : get_sized(c, bucket, key, &o);
    call_end(self);
    Py_DECREF(self);
    return r;
}

/* The UTF-8 of str s (None: NULL), kept alive in keep; -1 on an error. */
static int kept_utf8(PyObject *s, PyObject *keep, const char **out)
{
    *out = NULL;
    if (s == NULL || s == Py_None)
        return 0;
    PyObject *b = PyUnicode_AsUTF8String(s);
    if (b == NULL || PyList_Append(keep, b) < 0) {
        Py_XDECREF(b);
        return -1;
    }
    Py_DECREF(b);
    *out = PyBytes_AS_STRING(b);
    return 0;
}

/* Fills opts from content_type, storage_class and a {name: value} metadata
 * dict; the strings stay alive in *keep (a list the caller releases after
 * the call). */
static int put_opts(PyObject *ctype, PyObject *sclass, PyObject *meta, PyObject *tr,
                    s3r_put_opts_t *o, PyObject **keep)
{
    memset(o, 0, sizeof(*o));
    *keep = PyList_New(0);
    if (*keep == NULL || parse_transport(tr, &o->transport) < 0 ||
        kept_utf8(ctype, *keep, &o->content_type) < 0 ||
        kept_utf8(sclass, *keep, &o->storage_class) < 0)
        return -1;
    if (meta == NULL || meta == Py_None)
        return 0;
    PyObject *items = PyMapping_Items(meta);
    if (items == NULL)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *arr = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(s3r_meta_t));
    if (arr == NULL || PyList_Append(*keep, arr) < 0) {
        Py_XDECREF(arr);
        Py_DECREF(items);
        return -1;
    }
    Py_DECREF(arr);
    s3r_meta_t *m = (s3r_meta_t *)PyBytes_AS_STRING(arr);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        for (int j = 0; j < 2; j++) {
            PyObject *b = PyUnicode_AsUTF8String(PyTuple_GET_ITEM(kv, j));
            if (b == NULL || PyList_Append(*keep, b) < 0) {
                Py_XDECREF(b);
                Py_DECREF(items);
                return -1;
            }
            Py_DECREF(b);
            if (j == 0)
                m[i].name = PyBytes_AS_STRING(b);
            else
                m[i].value = PyBytes_AS_STRING(b);
        }
    }
    Py_DECREF(items);
    o->meta = m;
    o->n_meta = (size_t)n;
    return 0;
}

static PyObject *client_put(ClientObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"bucket",    "key",           "data",          "content_type",
                          "metadata",  "transport",     "if_none_match", "storage_class",
                          NULL};
    const char *bucket, *key;
    Py_buffer buf;
    PyObject *ctype = NULL, *meta = NULL, *tr = NULL, *sclass = NULL, *keep = NULL;
    int inm = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssy*|OOOpO", kwl, &bucket, &key, &buf, &ctype,
                                     &meta, &tr, &inm, &sclass))
        return NULL;
    s3r_put_opts_t o;
    s3r_version_info_t vi;
    PyObject *r = NULL;
    if (put_opts(ctype, sclass, meta, tr, &o, &keep) == 0) {
        o.if_none_match = inm;
        s3r_status_t st = S3R_OK;
        s3r_client_t *c = call_begin(self);
        if (c != NULL) {
            Py_INCREF(self);
            Py_BEGIN_ALLOW_THREADS
            st = with_version(c, s3r_object_put(c, bucket, key, buf.buf, (uint64_t)buf.len, &o),
                              &vi);
            s3r_buf_unregister_range(c, buf.buf, (size_t)buf.len);
            Py_END_ALLOW_THREADS
            if (st != S3R_OK)
                raise_status(c, st);
            call_end(self);
            Py_DECREF(self);
            if (st == S3R_OK)
                r = version_str(&vi);
        }
    }
    Py_XDECREF(keep);
    PyBuffer_Release(&buf);
    return r;
}

static PyObject *meta_dict(const s3r_meta_t *m, size_t n)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; d != NULL && i < n; i++) {
        PyObject *v = PyUnicode_DecodeUTF8(m[i].value, strlen(m[i].value), "replace");
        if (v == NULL || PyDict_SetItemString(d, m[i].name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* The string fields of s3r_object_info_t that head() returns by name (the
 * names of s3rdma.ObjectInfo's fields). */
static const struct {
    const char *name;
    size_t offset;
} head_fields[] = {
    {"storage_class", offsetof(s3r_object_info_t, storage_class)},
    {"content_encoding", offsetof(s3r_object_info_t, content_encoding)},
    {"content_disposition", offsetof(s3r_object_info_t, content_disposition)},
    {"content_language", offsetof(s3r_object_info_t, content_language)},
    {"cache_control", offsetof(s3r_object_info_t, cache_control)},
    {"expires", offsetof(s3r_object_info_t, expires)},
    {"server_side_encryption", offsetof(s3r_object_info_t, server_side_encryption)},
    {"checksum_crc32", offsetof(s3r_object_info_t, checksum_crc32)},
    {"checksum_crc32c", offsetof(s3r_object_info_t, checksum_crc32c)},
    {"checksum_crc64nvme", offsetof(s3r_object_info_t, checksum_crc64nvme)},
    {"checksum_sha1", offsetof(s3r_object_info_t, checksum_sha1)},
    {"checksum_sha256", offsetof(s3r_object_info_t, checksum_sha256)},
    {"checksum_type", offsetof(s3r_object_info_t, checksum_type)},
    {"object_lock_mode", offsetof(s3r_object_info_t, object_lock_mode)},
    {"object_lock_retain_until", offsetof(s3r_object_info_t, object_lock_retain_until)},
    {"object_lock_legal_hold", offsetof(s3r_object_info_t, object_lock_legal_hold)},
    {"expiration", offsetof(s3r_object_info_t, expiration)},
};

/* head(bucket, key, version_id=None)
 *   -> (size, etag, content_type, mtime, metadata, version_id, {field: value}) where
 *   the dict holds the head_fields the server sent. */
static PyObject *client_head(ClientObject *self, PyObject *args)
{
    const char *bucket, *key, *vid = NULL;
    if (!PyArg_ParseTuple(args, "ss|z", &bucket, &key, &vid))
        return NULL;
    s3r_object_info_t *info = NULL;
    s3r_status_t st;
    CALL(self, st, s3r_object_head_version(c, bucket, key, vid, &info));
    PyObject *meta = meta_dict(info->meta, info->n_meta);
    PyObject *more = PyDict_New();
    PyObject *r = NULL;
    for (size_t i = 0; more != NULL && i < sizeof(head_fields) / sizeof(head_fields[0]); i++) {
        const char *v = *(char *const *)((const char *)info + head_fields[i].offset);
        PyObject *pv = v ? PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "surrogateescape") : NULL;
        if (v != NULL && (pv == NULL || PyDict_SetItemString(more, head_fields[i].name, pv) < 0))
            Py_CLEAR(more);
        Py_XDECREF(pv);
    }
    if (meta != NULL && more != NULL)
        r = Py_BuildValue("KzzLOzO", (unsigned long long)info->size, info->etag, info->content_type,
                          (long long)info->mtime, meta, info->version_id, more);
    Py_XDECREF(meta);
    Py_XDECREF(more);
    s3r_object_info_free(info);
    return r;
}

/* delete(bucket, key, version_id=None) -> (version_id or None, delete_marker) */
static PyObject *client_delete(ClientObject *self, PyObject *args)
{
    const char *bucket, *key, *vid = NULL;
    if (!PyArg_ParseTuple(args, "ss|z", &bucket, &key, &vid))
        return NULL;
    s3r_status_t st;
    s3r_version_info_t vi;
    CALL(self, st, with_version(c, s3r_object_delete_version(c, bucket, key, vid), &vi));
    return Py_BuildValue("(NO)", version_str(&vi), vi.delete_marker ? Py_True : Py_False);
}

/* delete_many(bucket, [key, ...]) -> [(key, code, message), ...]: the keys
 * DeleteObjects could not delete. */
static PyObject *client_delete_many(ClientObject *self, PyObject *args)
{
    const char *bucket;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "sO", &bucket, &seq))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "keys must be a sequence of str");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    const char **keys = PyMem_Malloc((n ? (size_t)n : 1) * sizeof(*keys));
    if (keys == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        keys[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
        if (keys[i] == NULL) {
            PyMem_Free(keys);
            Py_DECREF(fast);
            return NULL;
        }
    }
    s3r_delete_errors_t *errs = NULL;
    s3r_status_t st;
    do {
        s3r_client_t *c = call_begin(self);
        if (c == NULL)
            break;
        Py_INCREF(self);
        PyThreadState *ts = PyEval_SaveThread();
        st = s3r_object_delete_many(c, bucket, keys, (size_t)n, &errs);
        PyEval_RestoreThread(ts);
        if (st != S3R_OK)
            raise_status(c, st);
        call_end(self);
        Py_DECREF(self);
    } while (0);
    PyMem_Free(keys);
    Py_DECREF(fast);
    if (PyErr_Occurred())
        return NULL;
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && errs && i < errs->n_errors; i++) {
        const s3r_delete_error_t *e = &errs->errors[i];
        PyObject *item = Py_BuildValue("(sss)", e->key, e->code, e->message);
        if (item == NULL || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    s3r_delete_errors_free(errs);
    return out;
}

/* copy(src_bucket, src_key, dst_bucket, dst_key, src_version_id=None)
 *   -> the copy's version id or None */
static PyObject *client_copy(ClientObject *self, PyObject *args)
{
    const char *sb, *sk, *db, *dk, *svid = NULL;
    if (!PyArg_ParseTuple(args, "ssss|z", &sb, &sk, &db, &dk, &svid))
        return NULL;
    s3r_status_t st;
    s3r_version_info_t vi;
    CALL(self, st, with_version(c, s3r_object_copy_version(c, sb, sk, svid, db, dk), &vi));
    return version_str(&vi);
}

/* A new list of the n strings v (a listing's CommonPrefixes), or NULL with
 * a Python error set. */
static PyObject *str_list(char *const *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(v[i]);
        if (s == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

/* list_versions(bucket, prefix, delimiter, key_marker, version_id_marker, max_keys)
 *   -> ([(key, version_id, is_latest, delete_marker, size, etag, mtime, storage_class)...],
 *       [prefix...],
 *       next_key_marker or None, next_version_id_marker or None) */
static PyObject *client_list_versions(ClientObject *self, PyObject *args)
{
    const char *bucket;
    s3r_version_list_opts_t o = {0};
    if (!PyArg_ParseTuple(args, "szzzzI", &bucket, &o.prefix, &o.delimiter, &o.key_marker,
                          &o.version_id_marker, &o.max_keys))
        return NULL;
    s3r_version_list_t *l = NULL;
    s3r_status_t st;
    CALL(self, st, s3r_object_list_versions(c, bucket, &o, &l));
    PyObject *vers = PyList_New((Py_ssize_t)l->n_versions);
    PyObject *pfx = str_list(l->prefixes, l->n_prefixes);
    PyObject *r = NULL;
    if (vers == NULL || pfx == NULL)
        goto out;
    for (size_t i = 0; i < l->n_versions; i++) {
        const s3r_version_entry_t *e = &l->versions[i];
        PyObject *t =
            Py_BuildValue("ssOOKzLz", e->key, e->version_id, e->is_latest ? Py_True : Py_False,
                          e->delete_marker ? Py_True : Py_False, (unsigned long long)e->size,
                          e->etag, (long long)e->mtime, l->storage_classes[i]);
        if (t == NULL)
            goto out;
        PyList_SET_ITEM(vers, (Py_ssize_t)i, t);
    }
    r = Py_BuildValue("OOzz", vers, pfx, l->truncated ? l->next_key_marker : NULL,
                      l->truncated ? l->next_version_id_marker : NULL);
out:
    Py_XDECREF(vers);
    Py_XDECREF(pfx);
    s3r_version_list_free(l);
    return r;
}

/* list(bucket, prefix, delimiter, token, start_after, max_keys)
 *   -> ([(key, size, etag, mtime, storage_class)...], [prefix...], next_token or None) */
static PyObject *client_list(ClientObject *self, PyObject *args)
{
    const char *bucket;
    s3r_list_opts_t o = {0};
    if (!PyArg_ParseTuple(args, "szzzzI", &bucket, &o.prefix, &o.delimiter, &o.continuation_token,
                          &o.start_after, &o.max_keys))
        return NULL;
    s3r_object_list_t *l = NULL;
    s3r_status_t st;
    CALL(self, st, s3r_object_list(c, bucket, &o, &l));
    PyObject *objs = PyList_New((Py_ssize_t)l->n_objects);
    PyObject *pfx = str_list(l->prefixes, l->n_prefixes);
    PyObject *r = NULL;
    if (objs == NULL || pfx == NULL)
        goto out;
    for (size_t i = 0; i < l->n_objects; i++) {
        const s3r_object_entry_t *e = &l->objects[i];
        PyObject *t = Py_BuildValue("sKzLz", e->key, (unsigned long long)e->size, e->etag,
                                    (long long)e->mtime, l->storage_classes[i]);
        if (t == NULL)
            goto out;
        PyList_SET_ITEM(objs, (Py_ssize_t)i, t);
    }
    r = Py_BuildValue("OOz", objs, pfx, l->truncated ? l->next_token : NULL);
out:
    Py_XDECREF(objs);
    Py_XDECREF(pfx);
    s3r_object_list_free(l);
    return r;
}

/* subresource(verb, kind, bucket, key, version_id, document) for verb "get" (-> bytes),
 * "put" (document: a bytes-like) or "delete" (-> None); kind is an s3r_subresource_t. */
static PyObject *client_subresource(ClientObject *self, PyObject *args)
{
    const char *verb;
    int kind;
    s3r_subresource_target_t t = {0};
    Py_buffer doc = {0};
    if (!PyArg_ParseTuple(args, "sisz|zy*", &verb, &kind, &t.bucket, &t.key, &t.version_id, &doc))
        return NULL;
    int v = strcmp(verb, "get") == 0      ? 0
            : strcmp(verb, "put") == 0    ? 1
            : strcmp(verb, "delete") == 0 ? 2
                                          : -1;
    PyObject *r = NULL;
    s3r_client_t *c = v < 0 ? NULL : call_begin(self);
    if (v < 0)
        PyErr_Format(PyExc_ValueError, "s3rdma: subresource verb %s", verb);
    if (c != NULL) {
        char *out = NULL;
        size_t n = 0;
        s3r_status_t st;
        Py_INCREF(self);
        Py_BEGIN_ALLOW_THREADS
        st = v == 0 ? s3r_subresource_get(c, (s3r_subresource_t)kind, &t, &out, &n)
             : v == 1
                 ? s3r_subresource_put(c, (s3r_subresource_t)kind, &t, doc.buf, (size_t)doc.len)
                 : s3r_subresource_delete(c, (s3r_subresource_t)kind, &t);
        Py_END_ALLOW_THREADS
        if (st != S3R_OK)
            raise_status(c, st);
        call_end(self);
        Py_DECREF(self);
        if (st == S3R_OK)
            r = v == 0 ? PyBytes_FromStringAndSize(out, (Py_ssize_t)n) : Py_NewRef(Py_None);
        s3r_free(out);
    }
    if (doc.obj != NULL)
        PyBuffer_Release(&doc);
    return r;
}

/* ---- Buckets ------------------------------------------------------------ */

/* Runs fn(c, bucket) for the one-argument bucket calls. */
static PyObject *bucket_call(ClientObject *self, PyObject *args,
                             s3r_status_t (*fn)(s3r_client_t *, const char *))
{
    const char *bucket;
    if (!PyArg_ParseTuple(args, "s", &bucket))
        return NULL;
    s3r_status_t st;
    CALL(self, st, fn(c, bucket));
    Py_RETURN_NONE;
}

static PyObject *client_bucket_create(ClientObject *self, PyObject *args)
{
    return bucket_call(self, args, s3r_bucket_create);
}

static PyObject *client_bucket_delete(ClientObject *self, PyObject *args)
{
    return bucket_call(self, args, s3r_bucket_delete);
}

static PyObject *client_bucket_head(ClientObject *self, PyObject *args)
{
    return bucket_call(self, args, s3r_bucket_head);
}

/* bucket_list() -> [(name, created)...] */
static PyObject *client_bucket_list(ClientObject *self, PyObject *Py_UNUSED(a))
{
    s3r_bucket_list_t *l = NULL;
    s3r_status_t st;
    CALL(self, st, s3r_bucket_list(c, &l));
    PyObject *r = PyList_New((Py_ssize_t)l->n_buckets);
    for (size_t i = 0; r != NULL && i < l->n_buckets; i++) {
        PyObject *t = Py_BuildValue("sL", l->buckets[i].name, (long long)l->buckets[i].created);
        if (t == NULL)
            Py_CLEAR(r);
        else
            PyList_SET_ITEM(r, (Py_ssize_t)i, t);
    }
    s3r_bucket_list_free(l);
    return r;
}

/* ---- Batches: many requests in flight on one session -------------------- */

/* The session allows 64 requests in flight; a batch keeps up to this many. */
#define BATCH_WINDOW 64

typedef struct {
    const char *key;
    Py_buffer buf;
    s3r_op_t *op;
    s3r_status_t st;
    uint64_t n;
    s3r_error_info_t err;
    uint64_t range_start, range_len; /* a GET's range (range_len 0: to the end) */
} batch_item_t;

/* Runs every item (GET into its buffer, or PUT of it) keeping up to
 * BATCH_WINDOW started and not yet waited for. Called without the GIL. */
static void batch_run(s3r_client_t *c, const char *bucket, batch_item_t *it, Py_ssize_t n,
                      int is_get, const s3r_put_opts_t *po, const s3r_get_opts_t *go)
{
    Py_ssize_t next = 0, waited = 0;
    while (waited < n) {
        while (next < n && next - waited < BATCH_WINDOW) {
            batch_item_t *x = &it[next++];
            s3r_get_opts_t gx = *go;
            gx.range_start = x->range_start;
            gx.range_len = x->range_len;
            x->st = is_get ? s3r_object_get_async(c, bucket, x->key, x->buf.buf,
                                                  (uint64_t)x->buf.len, &gx, &x->op)
                           : s3r_object_put_async(c, bucket, x->key, x->buf.buf,
                                                  (uint64_t)x->buf.len, po, &x->op);
            if (x->st != S3R_OK) {
                x->op = NULL;
                s3r_client_last_error(c, &x->err);
            }
        }
        batch_item_t *x = &it[waited++];
        if (x->op == NULL)
            continue;
        x->st = s3r_op_wait(x->op, &x->n);
        if (x->st != S3R_OK)
            s3r_client_last_error(c, &x->err);
        s3r_op_free(x->op);
        x->op = NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        s3r_buf_unregister_range(c, it[i].buf.buf, (size_t)it[i].buf.len);
}

/* The result of one item: its byte count, or the exception it failed with. */
static PyObject *batch_result(const batch_item_t *x, int is_get)
{
    if (x->st == S3R_OK) /* s3r_op_wait gives a GET's length; a PUT sent its buffer */
        return PyLong_FromUnsignedLongLong(is_get ? x->n : (uint64_t)x->buf.len);
    const s3r_error_info_t *e = &x->err;
    int same = e->status == x->st;
    return PyObject_CallFunction(
        error_factory, "ississsKs", (int)x->st, s3r_status_name(x->st), s3r_strerror(x->st),
        same ? e->http_status : 0, same ? e->code : "", same ? e->message : "",
        same ? e->request_id : "", (unsigned long long)(same ? e->needed_bytes : 0),
        s3r_transport_name(same ? e->transport : S3R_TRANSPORT_DEFAULT));
}

/* batch(is_get, bucket, keys, buffers, transport, content_type, ranges=None)
 * -> [int or exception...]: GETs into (or PUTs from) buffers[i] as keys[i];
 * ranges (GETs only): a (start, length) pair per key, length 0 to the end.
 * Never raises for a failed item: its slot holds the exception instead. */
static PyObject *client_batch(ClientObject *self, PyObject *args)
{
    int is_get;
    const char *bucket;
    PyObject *keys, *bufs, *tr, *ctype, *ranges = Py_None;
    if (!PyArg_ParseTuple(args, "psOOOO|O", &is_get, &bucket, &keys, &bufs, &tr, &ctype, &ranges))
        return NULL;
    s3r_get_opts_t go = {0};
    s3r_put_opts_t po;
    PyObject *keep = NULL, *fk = NULL, *fb = NULL, *fr = NULL, *r = NULL;
    batch_item_t *it = NULL;
    Py_ssize_t n = 0, got = 0;
    if (put_opts(ctype, NULL, NULL, tr, &po, &keep) < 0)
        goto out;
    go.transport = po.transport;
    /* Tuples of our own: the item pointers below (key strings, buffers)
     * outlive the GIL, and a list the caller passed may be changed by
     * another thread meanwhile, freeing the strings it held. */
    fk = PySequence_Tuple(keys);
    fb = fk ? PySequence_Tuple(bufs) : NULL;
    fr = fb && ranges != Py_None ? PySequence_Tuple(ranges) : NULL;
    if (fb == NULL || (ranges != Py_None && fr == NULL))
        goto out;
    n = PyTuple_GET_SIZE(fk);
    if (PyTuple_GET_SIZE(fb) != n || (fr != NULL && PyTuple_GET_SIZE(fr) != n)) {
        PyErr_SetString(PyExc_ValueError, "keys, buffers and ranges differ in length");
        goto out;
    }
    it = PyMem_Calloc((size_t)n + 1, sizeof(*it));
    if (it == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    for (; got < n; got++) {
        unsigned long long start = 0, len = 0;
        if (fr != NULL && !PyArg_ParseTuple(PyTuple_GET_ITEM(fr, got), "KK", &start, &len))
            goto out;
        it[got].range_start = start;
        it[got].range_len = len;
        it[got].key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(fk, got));
        if (it[got].key == NULL || PyObject_GetBuffer(PyTuple_GET_ITEM(fb, got), &it[got].buf,
                                                      is_get ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
            goto out;
    }
    s3r_client_t *c = call_begin(self);
    if (c == NULL)
        goto out;
    Py_INCREF(self);
    Py_BEGIN_ALLOW_THREADS
    batch_run(c, bucket, it, n, is_get, &po, &go);
    Py_END_ALLOW_THREADS
    call_end(self);
    Py_DECREF(self);
    r = PyList_New(n);
    for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
        PyObject *v = batch_result(&it[i], is_get);
        if (v == NULL)
            Py_CLEAR(r);
        else
            PyList_SET_ITEM(r, i, v);
    }
out:
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&it[i].buf);
    PyMem_Free(it);
    Py_XDECREF(fk);
    Py_XDECREF(fb);
    Py_XDECREF(fr);
    Py_XDECREF(keep);
    return r;
}

/* ---- Stats and session ---------------------------------------------------- */

static PyObject *client_stats(ClientObject *self, PyObject *Py_UNUSED(a))
{
    s3r_stats_t s;
    s3r_status_t st;
    /* read first: each retry counted here had already been counted by the
     * library, whose counter only grows, so the difference never wraps */
    unsigned long long retries = self->get_retries;
    CALL(self, st, s3r_client_stats(c, &s));
    return Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsKsKsK}", "http_ops", s.http_ops, "http_bytes", s.http_bytes, "token_ops",
        s.token_ops, "token_bytes", s.token_bytes, "native_ops", s.native_ops, "native_bytes",
        s.native_bytes, "fallbacks", s.fallbacks, "errors", s.errors - retries, "get_retries",
        retries, "rdma_sessions", s.rdma_sessions, "regions_registered", s.regions_registered);
}

static PyObject *client_rdma_connect(ClientObject *self, PyObject *Py_UNUSED(a))
{
    s3r_status_t st;
    CALL(self, st, s3r_client_rdma_connect(c));
    Py_RETURN_NONE;
}

static PyObject *client_rdma_connected(ClientObject *self, PyObject *Py_UNUSED(a))
{
    if (call_begin(self) == NULL)
        return NULL;
    int up = s3r_client_rdma_connected(self->c);
    call_end(self);
    return PyBool_FromLong(up);
}

/* ======================================================================== */
/* RegisteredBuffer: memory from s3r_buf_alloc, exported as a buffer          */
/* ======================================================================== */

typedef struct {
    PyObject_HEAD
    ClientObject *owner;
    void *p;
    Py_ssize_t len; /* bytes exported */
    size_t cap;     /* bytes of the block (a reused block may be larger) */
    pid_t pid;      /* the process that allocated it (pool_claim) */
} RegBufObject;

static PyTypeObject RegBufType;

static int regbuf_getbuffer(RegBufObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->len, 0, flags);
}

static void regbuf_dealloc(RegBufObject *self)
{
    ClientObject *o = self->owner;
    if (o != NULL) { /* NULL: the allocation failed */
        pool_give(o, self->p, self->cap, self->pid);
        o->buffers--;
        client_maybe_destroy(o);
        Py_DECREF(o);
    }
    PyObject_Free(self);
}

static PyBufferProcs regbuf_as_buffer = {.bf_getbuffer = (getbufferproc)regbuf_getbuffer};

static PyTypeObject RegBufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdma._s3rdma.RegisteredBuffer",
    .tp_basicsize = sizeof(RegBufObject),
    .tp_dealloc = (destructor)regbuf_dealloc,
    .tp_as_buffer = &regbuf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory registered with the client's RDMA session (see Client.allocate_buffer).",
};

/* alloc(n) -> RegisteredBuffer of n bytes (n >= 1) */
static PyObject *client_alloc(ClientObject *self, PyObject *args)
{
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "allocate_buffer: the size must be at least 1 byte");
        return NULL;
    }
    RegBufObject *b = PyObject_New(RegBufObject, &RegBufType);
    if (b == NULL)
        return NULL;
    b->owner = NULL;
    s3r_client_t *c = call_begin(self);
    if (c == NULL) {
        Py_DECREF(b);
        return NULL;
    }
    void *p = NULL;
    size_t cap = 0;
    s3r_status_t st = pool_take(self, c, (size_t)n, &p, &cap);
    if (st != S3R_OK) {
        raise_status(c, st);
        call_end(self);
        Py_DECREF(b);
        return NULL;
    }
    /* counted before call_end so a concurrent close() keeps the handle */
    Py_INCREF(self);
    b->owner = self;
    b->p = p;
    b->len = n;
    b->cap = cap;
    b->pid = self->pool_pid;
    self->buffers++;
    call_end(self);
    return (PyObject *)b;
}

/* ======================================================================== */
/* Multipart: an upload whose parts the caller supplies                       */
/* ======================================================================== */

/* Parts of one upload may be in flight on several threads at once (each
 * with its number, or the next one: s3r_multipart_part_at). complete() and
 * abort() take the upload away from new part() calls, then wait for the
 * running ones before they end it; a part() after them raises ValueError.
 * up and running are read and written with mu held; no holder of mu waits
 * for the GIL (it is held only for a few instructions, or in the condition
 * wait with the GIL released), so it may be taken with or without it. */
typedef struct {
    PyObject_HEAD
    ClientObject *owner;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* signalled when running drops to 0 */
    Py_ssize_t running;  /* part() calls inside the library */
    s3r_multipart_t *up; /* NULL once completed or aborted */
    int sync_ready;      /* mu and idle are initialised */
} MultipartObject;

static PyTypeObject MultipartType;

typedef enum mp_verb { MP_PART, MP_COMPLETE, MP_ABORT } mp_verb_t;

/* Runs verb on the upload (data and part_number, 0 for the next one: the
 * part, for MP_PART). complete() and part() on a finished upload raise
 * ValueError; abort() of one is a no-op. */
static PyObject *mp_run(MultipartObject *self, mp_verb_t verb, const Py_buffer *data,
                        unsigned part_number)
{
    if (verb == MP_ABORT) {
        pthread_mutex_lock(&self->mu);
        int finished = self->up == NULL;
        pthread_mutex_unlock(&self->mu);
        if (finished)
            Py_RETURN_NONE; /* even on a closed client */
    }
    s3r_client_t *c = call_begin(self->owner);
    if (c == NULL)
        return NULL;
    Py_INCREF(self);
    /* Claimed before the GIL goes: a part() that has begun is one that a
     * complete() or abort() on another thread waits for. */
    pthread_mutex_lock(&self->mu);
    s3r_multipart_t *up = self->up;
    if (verb == MP_PART)
        self->running += up != NULL;
    else
        self->up = NULL; /* complete and abort free it, whatever their result */
    pthread_mutex_unlock(&self->mu);
    s3r_status_t st = S3R_OK;
    s3r_version_info_t vi = {{0}};
    Py_BEGIN_ALLOW_THREADS
    if (verb == MP_PART && up != NULL) {
        st = part_number ? s3r_multipart_part_at(up, part_number, data->buf, (uint64_t)data->len)
                         : s3r_multipart_part(up, data->buf, (uint64_t)data->len);
        s3r_buf_unregister_range(c, data->buf, (size_t)data->len);
        pthread_mutex_lock(&self->mu);
        if (--self->running == 0)
            pthread_cond_broadcast(&self->idle);
        pthread_mutex_unlock(&self->mu);
    } else if (verb != MP_PART) {
        pthread_mutex_lock(&self->mu);
        while (self->running > 0)
            pthread_cond_wait(&self->idle, &self->mu);
        pthread_mutex_unlock(&self->mu);
        if (up != NULL && verb == MP_COMPLETE)
            st = with_version(c, s3r_multipart_complete(up), &vi);
        else if (up != NULL)
            s3r_multipart_abort(up);
    }
    Py_END_ALLOW_THREADS
    if (up == NULL && verb != MP_ABORT)
        PyErr_SetString(PyExc_ValueError, "s3rdma: the upload is already finished");
    else if (st != S3R_OK)
        raise_status(c, st);
    call_end(self->owner);
    Py_DECREF(self);
    if ((up == NULL && verb != MP_ABORT) || st != S3R_OK)
        return NULL;
    if (verb == MP_COMPLETE)
        return version_str(&vi);
    Py_RETURN_NONE;
}

/* part(data, part_number=0): 0 is the next number */
static PyObject *mp_part(MultipartObject *self, PyObject *args)
{
    Py_buffer buf;
    unsigned int n = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &buf, &n))
        return NULL;
    PyObject *r = mp_run(self, MP_PART, &buf, n);
    PyBuffer_Release(&buf);
    return r;
}

static PyObject *mp_complete(MultipartObject *self, PyObject *Py_UNUSED(a))
{
    return mp_run(self, MP_COMPLETE, NULL, 0);
}

static PyObject *mp_abort(MultipartObject *self, PyObject *Py_UNUSED(a))
{
    return mp_run(self, MP_ABORT, NULL, 0);
}

static void mp_dealloc(MultipartObject *self)
{
    ClientObject *o = self->owner;
    if (o != NULL) { /* NULL: the start failed */
        /* an upload never completed is aborted (o->c is alive: it is counted) */
        if (self->up != NULL) {
            Py_BEGIN_ALLOW_THREADS
            s3r_multipart_abort(self->up);
            Py_END_ALLOW_THREADS
        }
        o->buffers--;
        client_maybe_destroy(o);
        Py_DECREF(o);
    }
    if (self->sync_ready) {
        pthread_cond_destroy(&self->idle);
        pthread_mutex_destroy(&self->mu);
    }
    PyObject_Free(self);
}

static PyMethodDef mp_methods[] = {
    {"part", (PyCFunction)mp_part, METH_VARARGS,
     "part(data, part_number=0): upload part part_number (0: the next); parts may be in "
     "flight on several threads at once."},
    {"complete", (PyCFunction)mp_complete, METH_NOARGS,
     "Complete the upload; -> the version id written, or None."},
    {"abort", (PyCFunction)mp_abort, METH_NOARGS, "Abort the upload (no-op when finished)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MultipartType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdma._s3rdma.Multipart",
    .tp_basicsize = sizeof(MultipartObject),
    .tp_dealloc = (destructor)mp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = mp_methods,
    .tp_doc = "A multipart upload in progress (s3r_multipart_*).",
};

/* multipart(bucket, key, content_type, metadata, transport, if_none_match=False,
 *           storage_class=None) -> Multipart */
static PyObject *client_multipart(ClientObject *self, PyObject *args)
{
    const char *bucket, *key;
    PyObject *ctype, *meta, *tr, *sclass = NULL, *keep = NULL;
    int inm = 0;
    if (!PyArg_ParseTuple(args, "ssOOO|pO", &bucket, &key, &ctype, &meta, &tr, &inm, &sclass))
        return NULL;
    MultipartObject *m = PyObject_New(MultipartObject, &MultipartType);
    if (m == NULL)
        return NULL;
    m->owner = NULL;
    m->up = NULL;
    m->running = 0;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->idle, NULL);
    m->sync_ready = 1;
    s3r_put_opts_t o;
    s3r_client_t *c;
    if (put_opts(ctype, sclass, meta, tr, &o, &keep) < 0 || (c = call_begin(self)) == NULL) {
        Py_XDECREF(keep);
        Py_DECREF(m);
        return NULL;
    }
    o.if_none_match = inm;
    s3r_status_t st;
    Py_BEGIN_ALLOW_THREADS
    st = s3r_multipart_start(c, bucket, key, &o, &m->up);
    Py_END_ALLOW_THREADS
    Py_XDECREF(keep);
    if (st != S3R_OK) {
        raise_status(c, st);
        call_end(self);
        Py_DECREF(m);
        return NULL;
    }
    /* an open upload keeps the handle alive like a buffer; counted before
     * call_end so a concurrent close() cannot destroy it */
    Py_INCREF(self);
    m->owner = self;
    self->buffers++;
    call_end(self);
    return (PyObject *)m;
}

/* ======================================================================== */
/* Type and module                                                           */
/* ======================================================================== */

static PyMethodDef client_methods[] = {
    {"close", (PyCFunction)client_close, METH_NOARGS, "Close the client (idempotent)."},
    {"get_into", (PyCFunction)(void (*)(void))client_get_into, METH_VARARGS | METH_KEYWORDS,
     "get_into(bucket, key, buffer, start=0, length=0, transport=None, version_id=None) "
     "-> bytes read"},
    {"get", (PyCFunction)(void (*)(void))client_get, METH_VARARGS | METH_KEYWORDS,
     "get(bucket, key, start=0, length=0, transport=None, version_id=None) -> bytes"},
    {"put", (PyCFunction)(void (*)(void))client_put, METH_VARARGS | METH_KEYWORDS,
     "put(bucket, key, data, content_type=None, metadata=None, transport=None, "
     "if_none_match=False, storage_class=None) -> version id or None"},
    {"head", (PyCFunction)client_head, METH_VARARGS,
     "head(bucket, key, version_id=None) -> (size, etag, content_type, mtime, metadata, "
     "version_id)"},
    {"delete", (PyCFunction)client_delete, METH_VARARGS,
     "delete(bucket, key, version_id=None) -> (version_id, delete_marker)"},
    {"delete_many", (PyCFunction)client_delete_many, METH_VARARGS,
     "delete_many(bucket, keys) -> [(key, code, message)] of the keys not deleted"},
    {"copy", (PyCFunction)client_copy, METH_VARARGS,
     "copy(src_bucket, src_key, dst_bucket, dst_key, src_version_id=None) -> version id"},
    {"subresource", (PyCFunction)client_subresource, METH_VARARGS,
     "subresource(verb, kind, bucket, key, version_id, document=b'')"},
    {"list_versions", (PyCFunction)client_list_versions, METH_VARARGS,
     "list_versions(bucket, prefix, delimiter, key_marker, version_id_marker, max_keys)"},
    {"list", (PyCFunction)client_list, METH_VARARGS,
     "list(bucket, prefix, delimiter, token, start_after, max_keys) -> (objects, prefixes, "
     "next_token)"},
    {"bucket_create", (PyCFunction)client_bucket_create, METH_VARARGS, "bucket_create(bucket)"},
    {"bucket_delete", (PyCFunction)client_bucket_delete, METH_VARARGS, "bucket_delete(bucket)"},
    {"bucket_head", (PyCFunction)client_bucket_head, METH_VARARGS, "bucket_head(bucket)"},
    {"bucket_list", (PyCFunction)client_bucket_list, METH_NOARGS,
     "bucket_list() -> [(name, created)]"},
    {"batch", (PyCFunction)client_batch, METH_VARARGS,
     "batch(is_get, bucket, keys, buffers, transport, content_type) -> [n or exception]"},
    {"alloc", (PyCFunction)client_alloc, METH_VARARGS, "alloc(n) -> RegisteredBuffer"},
    {"multipart", (PyCFunction)client_multipart, METH_VARARGS,
     "multipart(bucket, key, content_type, metadata, transport, if_none_match=False, "
     "storage_class=None) -> Multipart"},
    {"stats", (PyCFunction)client_stats, METH_NOARGS, "stats() -> dict of counters"},
    {"rdma_connect", (PyCFunction)client_rdma_connect, METH_NOARGS, "Open the RDMA session now."},
    {"rdma_connected", (PyCFunction)client_rdma_connected, METH_NOARGS,
     "True while an RDMA session is up."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef client_getset[] = {
    {"closed", (getter)client_get_closed, NULL, "True after close()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ClientType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdma._s3rdma.Client",
    .tp_basicsize = sizeof(ClientObject),
    .tp_dealloc = (destructor)client_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_methods = client_methods,
    .tp_getset = client_getset,
    .tp_init = (initproc)client_init,
    .tp_new = PyType_GenericNew,
    .tp_doc = "The libs3rdma client handle (s3r_client_t); use s3rdma.Client instead.",
};

static PyObject *set_error_factory(PyObject *Py_UNUSED(m), PyObject *f)
{
    Py_XSETREF(error_factory, Py_NewRef(f));
    Py_RETURN_NONE;
}

static PyObject *size_parse(PyObject *Py_UNUSED(m), PyObject *args)
{
    const char *s;
    if (!PyArg_ParseTuple(args, "s", &s))
        return NULL;
    uint64_t v;
    if (s3r_size_parse(s, &v) != S3R_OK) {
        PyErr_Format(PyExc_ValueError, "s3rdma: bad size %R (bytes, or K/M/G with B or iB)",
                     PyTuple_GET_ITEM(args, 0));
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(v);
}

/* aws_settings(profile=None, keys="all") -> dict: what s3r_aws_settings_load
 * (keys "static": s3r_aws_settings_load_static_keys, "none":
 * s3r_aws_settings_load_without_keys) finds in the AWS environment and
 * shared files (only the settings found), or
 * ValueError with the library's reason (a file that does not parse, an
 * unknown profile named on purpose, a credential_process or container
 * endpoint that failed). The GIL is released meanwhile. The environment is read as it is at
 * the call, so os.environ changes made by Python count. */
static PyObject *aws_settings(PyObject *Py_UNUSED(m), PyObject *args)
{
    const char *profile = NULL, *keys = "all";
    if (!PyArg_ParseTuple(args, "|zs", &profile, &keys))
        return NULL;
    s3r_status_t (*load)(const char *, s3r_aws_settings_t *) =
        strcmp(keys, "all") == 0      ? s3r_aws_settings_load
        : strcmp(keys, "static") == 0 ? s3r_aws_settings_load_static_keys
        : strcmp(keys, "none") == 0   ? s3r_aws_settings_load_without_keys
                                      : NULL;
    if (load == NULL) {
        PyErr_Format(PyExc_ValueError, "s3rdma: keys=%R: \"all\", \"static\" or \"none\"",
                     PyTuple_GET_ITEM(args, 1));
        return NULL;
    }
    s3r_aws_settings_t s;
    s3r_status_t st;
    /* A credential_process or a container endpoint may take a while. */
    Py_BEGIN_ALLOW_THREADS
    st = load(profile, &s);
    Py_END_ALLOW_THREADS
    if (st != S3R_OK) {
        s3r_error_info_t e;
        PyErr_Format(PyExc_ValueError, "s3rdma: %s",
                     s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : "out of memory");
        return NULL;
    }
    PyObject *d = PyDict_New();
    const struct {
        const char *name, *value;
    } f[] = {{"endpoint", s.endpoint},
             {"access_key", s.access_key},
             {"secret_key", s.secret_key},
             {"session_token", s.session_token},
             {"region", s.region},
             {"ca_bundle", s.ca_bundle},
             {"rdma_endpoint", s.rdma_endpoint},
             {"transport", s.transport},
             {"profile", s.profile},
             {"keys_from", s.keys_from}};
    for (size_t i = 0; d != NULL && i < sizeof(f) / sizeof(f[0]); i++) {
        if (f[i].value == NULL)
            continue;
        PyObject *v = PyUnicode_DecodeFSDefault(f[i].value);
        if (v == NULL || PyDict_SetItemString(d, f[i].name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    s3r_aws_settings_free(&s);
    return d;
}

static PyMethodDef module_methods[] = {
    {"set_error_factory", set_error_factory, METH_O,
     "set_error_factory(f): f(status, name, description, http_status, code, message, "
     "request_id, needed_bytes, transport) returns the exception to raise."},
    {"size_parse", size_parse, METH_VARARGS, "size_parse('1MiB') -> 1048576"},
    {"aws_settings", aws_settings, METH_VARARGS,
     "aws_settings(profile=None, keys='all') -> dict of the settings found in the AWS "
     "environment and ~/.aws profiles (keys 'static': not a program's or a container's; "
     "'none')"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_s3rdma",
    "CPython binding of libs3rdma.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__s3rdma(void)
{
    if (PyType_Ready(&ClientType) < 0 || PyType_Ready(&RegBufType) < 0 ||
        PyType_Ready(&MultipartType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Client", (PyObject *)&ClientType) < 0 ||
        PyModule_AddObjectRef(m, "RegisteredBuffer", (PyObject *)&RegBufType) < 0 ||
        PyModule_AddObjectRef(m, "Multipart", (PyObject *)&MultipartType) < 0 ||
        PyModule_AddObject(m, "HEADER_VERSION",
                           Py_BuildValue("iii", S3RDMA_VERSION_MAJOR, S3RDMA_VERSION_MINOR,
                                         S3RDMA_VERSION_PATCH)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
