/*
 * JNI fast path of org.hdfsrdma.ucx.NativeUcx: the per-packet UCX calls of
 * the write path, made without JUCX, which allocates Java objects for every
 * request and every received message and looks up methods per callback.
 *
 *  - progress, arm-and-poll with a timeout, signal: any thread may drive a
 *    worker created thread-safe (UCX releases the worker lock while a thread
 *    sleeps in poll);
 *  - active-message handlers: one id is delivered to a Java dispatcher
 *    (copied into a scratch buffer the dispatcher reads, then one upcall with
 *    primitives only); every other id the wire can carry (0..65535) gets a
 *    handler that only counts, so that UCX's handler table covers every id
 *    (UCX 1.13 indexes it with the id from the wire without a bounds check)
 *    and no stray id makes UCX log per message;
 *  - active-message sends and gets whose completion is an int status slot in
 *    native memory (UCS_INPROGRESS until the callback stores the final
 *    status), so no Java object exists per operation;
 *  - remote keys: unpack, direct pointer (ucp_rkey_ptr), destroy;
 *  - SysV shared memory facts from the kernel (IPC_STAT, a read-only attach)
 *    that bound what a DataNode reads from a peer's segment.
 *
 * Like hdfsrdma_ucxinfo.c this file links no UCX: the symbols are looked up
 * in the libucp/libucs the process already loaded (JUCX loads them), once,
 * by bind(). UCX headers give the types and constants only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define EXPORT __attribute__((visibility("default")))

/* Highest active-message id the UCP wire format can carry (uint16_t). */
#define MAX_AM_ID 65535

/* Counters of an installed dispatcher, in the order NativeUcx reads them. */
enum {
    COUNTER_DELIVERED = 0, /* messages handed to the dispatcher */
    COUNTER_FOREIGN,       /* messages with an id nobody registered */
    COUNTER_OVERSIZED,     /* messages longer than the scratch buffer, or
                              with a user header */
    COUNTER_RENDEZVOUS,    /* messages offered by rendezvous, never fetched */
    COUNTER_UPCALL_FAILED, /* the dispatcher threw */
    COUNTER_LAST_FOREIGN_ID,
    COUNTER_COUNT
};

static struct {
    unsigned (*worker_progress)(ucp_worker_h);
    ucs_status_t (*worker_arm)(ucp_worker_h);
    ucs_status_t (*worker_signal)(ucp_worker_h);
    ucs_status_t (*worker_get_efd)(ucp_worker_h, int *);
    ucs_status_t (*worker_set_am_recv_handler)(ucp_worker_h,
                                               const ucp_am_handler_param_t *);
    ucs_status_ptr_t (*am_send_nbx)(ucp_ep_h, unsigned, const void *, size_t,
                                    const void *, size_t,
                                    const ucp_request_param_t *);
    ucs_status_ptr_t (*get_nbx)(ucp_ep_h, void *, size_t, uint64_t,
                                ucp_rkey_h, const ucp_request_param_t *);
    void (*request_free)(void *);
    ucs_status_t (*ep_rkey_unpack)(ucp_ep_h, const void *, ucp_rkey_h *);
    ucs_status_t (*rkey_ptr)(ucp_rkey_h, uint64_t, void **);
    void (*rkey_destroy)(ucp_rkey_h);
    const char *(*status_string)(ucs_status_t);
    int bound;
} ucx;

static JavaVM *g_vm;

/*
 * The JNIEnv of the thread that entered UCX through this library: UCX calls
 * our handlers on that thread, inside progress or a send.
 */
static __thread JNIEnv *tls_env;

typedef struct {
    jobject dispatcher;   /* global reference */
    jmethodID on_message; /* void onMessage(int length, long replyEndpoint) */
    uint8_t *scratch;
    size_t scratch_capacity;
    volatile int64_t *counters; /* COUNTER_COUNT longs, owned by Java */
} dispatch_t;

EXPORT JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    (void)reserved;
    g_vm = vm;
    return JNI_VERSION_1_6;
}

static JNIEnv *current_env(void)
{
    JNIEnv *env = tls_env;

    if (env != NULL || g_vm == NULL) {
        return env;
    }
    if ((*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_6) == JNI_OK) {
        return env;
    }
    /* A thread of UCX's own (its async thread): attach it for good. */
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void **)&env, NULL) !=
        JNI_OK) {
        return NULL;
    }
    return env;
}

static void *lookup(const char *lib, const char *name)
{
    void *handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    void *sym;

    if (handle == NULL) {
        return NULL;
    }
    sym = dlsym(handle, name);
    dlclose(handle); /* drops only the reference RTLD_NOLOAD took */
    return sym;
}

#define BIND(field, lib, name)                                        \
    do {                                                              \
        *(void **)&ucx.field = lookup(lib, name);                     \
        if (ucx.field == NULL) {                                      \
            missing = name;                                           \
        }                                                             \
    } while (0)

/* Resolves the UCX functions; returns null, or the first one missing. */
EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_bind(JNIEnv *env, jclass cls)
{
    const char *missing = NULL;

    (void)cls;
    BIND(worker_progress, "libucp.so.0", "ucp_worker_progress");
    BIND(worker_arm, "libucp.so.0", "ucp_worker_arm");
    BIND(worker_signal, "libucp.so.0", "ucp_worker_signal");
    BIND(worker_get_efd, "libucp.so.0", "ucp_worker_get_efd");
    BIND(worker_set_am_recv_handler, "libucp.so.0",
         "ucp_worker_set_am_recv_handler");
    BIND(am_send_nbx, "libucp.so.0", "ucp_am_send_nbx");
    BIND(get_nbx, "libucp.so.0", "ucp_get_nbx");
    BIND(request_free, "libucp.so.0", "ucp_request_free");
    BIND(ep_rkey_unpack, "libucp.so.0", "ucp_ep_rkey_unpack");
    BIND(rkey_ptr, "libucp.so.0", "ucp_rkey_ptr");
    BIND(rkey_destroy, "libucp.so.0", "ucp_rkey_destroy");
    BIND(status_string, "libucs.so.0", "ucs_status_string");
    if (missing != NULL) {
        return (*env)->NewStringUTF(env, missing);
    }
    ucx.bound = 1;
    return NULL;
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_statusString(JNIEnv *env, jclass cls,
                                             jint status)
{
    (void)cls;
    if (!ucx.bound) {
        return NULL;
    }
    return (*env)->NewStringUTF(env, ucx.status_string((ucs_status_t)status));
}

/* ------------------------------------------------------------------ progress */

EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_progress(JNIEnv *env, jclass cls,
                                         jlong worker)
{
    JNIEnv *prev = tls_env;
    unsigned events;

    (void)cls;
    tls_env = env;
    events = ucx.worker_progress((ucp_worker_h)(intptr_t)worker);
    tls_env = prev;
    return (jint)events;
}

/*
 * Arms the worker and sleeps on its event fd for at most timeoutMs (-1: no
 * limit). 1: an event is (or was already) pending, or a signal came;
 * 0: the timeout passed; negative: a UCS status or -errno.
 */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_waitEvents(JNIEnv *env, jclass cls,
                                           jlong worker, jint efd,
                                           jint timeout_ms)
{
    JNIEnv *prev = tls_env;
    struct pollfd pfd;
    ucs_status_t status;
    int ret;

    (void)cls;
    tls_env = env;
    status = ucx.worker_arm((ucp_worker_h)(intptr_t)worker);
    tls_env = prev;
    if (status == UCS_ERR_BUSY) {
        return 1;
    }
    if (status != UCS_OK) {
        return (jint)status;
    }
    pfd.fd      = efd;
    pfd.events  = POLLIN;
    pfd.revents = 0;
    ret = poll(&pfd, 1, timeout_ms);
    if (ret > 0) {
        return 1;
    }
    if (ret == 0) {
        return 0;
    }
    return errno == EINTR ? 1 : -errno;
}

/* The worker's event fd (needs the wakeup feature), or a negative status. */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_eventFd(JNIEnv *env, jclass cls, jlong worker)
{
    ucs_status_t status;
    int fd = -1;

    (void)env;
    (void)cls;
    status = ucx.worker_get_efd((ucp_worker_h)(intptr_t)worker, &fd);
    return status == UCS_OK ? fd : (jint)status;
}

EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_signal(JNIEnv *env, jclass cls, jlong worker)
{
    (void)env;
    (void)cls;
    return (jint)ucx.worker_signal((ucp_worker_h)(intptr_t)worker);
}

/* ------------------------------------------------------- active messages */

static ucs_status_t deliver(void *arg, const void *header,
                            size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    dispatch_t *d = arg;
    ucp_ep_h reply = NULL;
    JNIEnv *env;

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* Never fetched: our senders force eager; UCX drops it. */
        __atomic_fetch_add(&d->counters[COUNTER_RENDEZVOUS], 1,
                           __ATOMIC_RELAXED);
        return UCS_OK;
    }
    (void)header;
    if (header_length != 0 || length > d->scratch_capacity) {
        __atomic_fetch_add(&d->counters[COUNTER_OVERSIZED], 1,
                           __ATOMIC_RELAXED);
        return UCS_OK;
    }
    env = current_env();
    if (env == NULL) {
        __atomic_fetch_add(&d->counters[COUNTER_UPCALL_FAILED], 1,
                           __ATOMIC_RELAXED);
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
        reply = param->reply_ep;
    }
    if (length > 0) {
        memcpy(d->scratch, data, length);
    }
    __atomic_fetch_add(&d->counters[COUNTER_DELIVERED], 1, __ATOMIC_RELAXED);
    (*env)->CallVoidMethod(env, d->dispatcher, d->on_message, (jint)length,
                           (jlong)(intptr_t)reply);
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
        __atomic_fetch_add(&d->counters[COUNTER_UPCALL_FAILED], 1,
                           __ATOMIC_RELAXED);
    }
    return UCS_OK;
}

static ucs_status_t count_foreign(void *arg, const void *header,
                                  size_t header_length, void *data,
                                  size_t length,
                                  const ucp_am_recv_param_t *param)
{
    dispatch_t *d = arg;

    (void)header;
    (void)header_length;
    (void)data;
    (void)length;
    (void)param;
    __atomic_fetch_add(&d->counters[COUNTER_FOREIGN], 1, __ATOMIC_RELAXED);
    return UCS_OK;
}

static ucs_status_t set_handler(ucp_worker_h worker, unsigned id,
                                ucp_am_recv_callback_t cb, void *arg)
{
    ucp_am_handler_param_t p;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG |
                   UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id    = id;
    p.cb    = cb;
    p.arg   = arg;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    return ucx.worker_set_am_recv_handler(worker, &p);
}

/*
 * Installs the handlers of every active-message id on the worker: amId goes
 * to dispatcher.onMessage(int, long) with the message copied to scratch;
 * every other id is only counted. Returns the handle to release after the
 * worker is destroyed, or a negative UCS status.
 */
EXPORT JNIEXPORT jlong JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_installHandlers(JNIEnv *env, jclass cls,
                                                jlong worker, jint am_id,
                                                jobject dispatcher,
                                                jlong scratch,
                                                jint scratch_capacity,
                                                jlong counters)
{
    ucp_worker_h w = (ucp_worker_h)(intptr_t)worker;
    jclass dcls;
    dispatch_t *d;
    ucs_status_t status;
    int id;

    (void)cls;
    if (am_id < 0 || am_id > MAX_AM_ID || scratch == 0 ||
        scratch_capacity <= 0 || counters == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    dcls = (*env)->GetObjectClass(env, dispatcher);
    d    = calloc(1, sizeof(*d));
    if (d == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    d->on_message = (*env)->GetMethodID(env, dcls, "onMessage", "(IJ)V");
    if (d->on_message == NULL) {
        free(d);
        return UCS_ERR_INVALID_PARAM; /* NoSuchMethodError is pending */
    }
    d->dispatcher       = (*env)->NewGlobalRef(env, dispatcher);
    d->scratch          = (uint8_t *)(intptr_t)scratch;
    d->scratch_capacity = (size_t)scratch_capacity;
    d->counters         = (volatile int64_t *)(intptr_t)counters;
    /* Highest id first: the table grows to its full size once. */
    for (id = MAX_AM_ID; id >= 0; --id) {
        status = set_handler(w, (unsigned)id,
                             id == am_id ? deliver : count_foreign, d);
        if (status != UCS_OK) {
            (*env)->DeleteGlobalRef(env, d->dispatcher);
            free(d);
            return status;
        }
    }
    return (jlong)(intptr_t)d;
}

/* Frees a handle of installHandlers; only once its worker is destroyed. */
EXPORT JNIEXPORT void JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_releaseHandlers(JNIEnv *env, jclass cls,
                                                jlong handle)
{
    dispatch_t *d = (dispatch_t *)(intptr_t)handle;

    (void)cls;
    if (d != NULL) {
        (*env)->DeleteGlobalRef(env, d->dispatcher);
        free(d);
    }
}

/* ------------------------------------------------------- sends and gets */

static void store_status(void *request, ucs_status_t status, void *user_data)
{
    __atomic_store_n((int32_t *)user_data, (int32_t)status, __ATOMIC_RELEASE);
    ucx.request_free(request);
}

static jint start_result(ucs_status_ptr_t r, int32_t *slot)
{
    if (r == NULL) {
        __atomic_store_n(slot, UCS_OK, __ATOMIC_RELEASE);
        return 0;
    }
    if (UCS_PTR_IS_ERR(r)) {
        __atomic_store_n(slot, (int32_t)UCS_PTR_STATUS(r), __ATOMIC_RELEASE);
        return (jint)UCS_PTR_STATUS(r);
    }
    return UCS_INPROGRESS; /* the callback stores the final status */
}

/*
 * Sends length bytes at address as one eager active message (with the reply
 * endpoint flag). 0: done (the buffer may be reused); UCS_INPROGRESS: the
 * buffer must stay intact until *slot is no longer UCS_INPROGRESS;
 * negative: failed, nothing sent.
 */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_amSend(JNIEnv *env, jclass cls, jlong ep,
                                       jint am_id, jlong address, jint length,
                                       jlong slot_address)
{
    int32_t *slot = (int32_t *)(intptr_t)slot_address;
    ucp_request_param_t p;
    JNIEnv *prev = tls_env;
    ucs_status_ptr_t r;

    (void)cls;
    __atomic_store_n(slot, UCS_INPROGRESS, __ATOMIC_RELAXED);
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                     UCP_OP_ATTR_FIELD_USER_DATA;
    p.flags     = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    p.cb.send   = store_status;
    p.user_data = slot;
    tls_env = env;
    r = ucx.am_send_nbx((ucp_ep_h)(intptr_t)ep, (unsigned)am_id, NULL, 0,
                        (void *)(intptr_t)address, (size_t)length, &p);
    tls_env = prev;
    return start_result(r, slot);
}

/* Starts a get of length bytes; results as amSend. */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_get(JNIEnv *env, jclass cls, jlong ep,
                                    jlong remote, jlong rkey, jlong local,
                                    jlong length, jlong slot_address)
{
    int32_t *slot = (int32_t *)(intptr_t)slot_address;
    ucp_request_param_t p;
    JNIEnv *prev = tls_env;
    ucs_status_ptr_t r;

    (void)cls;
    __atomic_store_n(slot, UCS_INPROGRESS, __ATOMIC_RELAXED);
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send      = store_status;
    p.user_data    = slot;
    tls_env = env;
    r = ucx.get_nbx((ucp_ep_h)(intptr_t)ep, (void *)(intptr_t)local,
                    (size_t)length, (uint64_t)remote,
                    (ucp_rkey_h)(intptr_t)rkey, &p);
    tls_env = prev;
    return start_result(r, slot);
}

/* The value of a status slot, read with acquire ordering. */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_slotStatus(JNIEnv *env, jclass cls,
                                           jlong slot_address)
{
    (void)env;
    (void)cls;
    return __atomic_load_n((int32_t *)(intptr_t)slot_address,
                           __ATOMIC_ACQUIRE);
}

/* -------------------------------------------------------------- rkeys */

/*
 * Unpacks a packed remote key on ep. Returns the key handle, or 0 with the
 * UCS status stored at status_address.
 */
EXPORT JNIEXPORT jlong JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_rkeyUnpack(JNIEnv *env, jclass cls, jlong ep,
                                           jlong packed, jlong status_address)
{
    ucp_rkey_h rkey = NULL;
    ucs_status_t status;

    (void)env;
    (void)cls;
    status = ucx.ep_rkey_unpack((ucp_ep_h)(intptr_t)ep,
                                (const void *)(intptr_t)packed, &rkey);
    *(int32_t *)(intptr_t)status_address = (int32_t)status;
    return status == UCS_OK ? (jlong)(intptr_t)rkey : 0;
}

/*
 * The local address through which the remote address is directly readable
 * (shared memory), or 0 when the key gives no direct access.
 */
EXPORT JNIEXPORT jlong JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_rkeyPointer(JNIEnv *env, jclass cls,
                                            jlong rkey, jlong remote)
{
    void *local = NULL;

    (void)env;
    (void)cls;
    if (ucx.rkey_ptr((ucp_rkey_h)(intptr_t)rkey, (uint64_t)remote, &local) !=
        UCS_OK) {
        return 0;
    }
    return (jlong)(intptr_t)local;
}

EXPORT JNIEXPORT void JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_rkeyDestroy(JNIEnv *env, jclass cls,
                                            jlong rkey)
{
    (void)env;
    (void)cls;
    if (rkey != 0) {
        ucx.rkey_destroy((ucp_rkey_h)(intptr_t)rkey);
    }
}

/* --------------------------------------------------- SysV shared memory */

/*
 * The kernel's facts about a SysV segment: out[0] size, out[1] creator pid,
 * out[2] owner uid, out[3] creator uid, out[4] attaches, out[5] mode bits.
 * Returns 0, or -errno (no such segment, no permission).
 */
EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_shmStat(JNIEnv *env, jclass cls, jint shmid,
                                        jlongArray out)
{
    struct shmid_ds ds;
    jlong facts[6];

    (void)cls;
    if ((*env)->GetArrayLength(env, out) < 6) {
        return -EINVAL;
    }
    if (shmctl(shmid, IPC_STAT, &ds) != 0) {
        return -errno;
    }
    facts[0] = (jlong)ds.shm_segsz;
    facts[1] = (jlong)ds.shm_cpid;
    facts[2] = (jlong)ds.shm_perm.uid;
    facts[3] = (jlong)ds.shm_perm.cuid;
    facts[4] = (jlong)ds.shm_nattch;
    facts[5] = (jlong)ds.shm_perm.mode;
    (*env)->SetLongArrayRegion(env, out, 0, 6, facts);
    return 0;
}

/*
 * Attaches a segment read-only: while attached it cannot disappear, so a
 * later attach of the same id by UCX cannot fail. Returns the address, or
 * -errno.
 */
EXPORT JNIEXPORT jlong JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_shmAttach(JNIEnv *env, jclass cls, jint shmid)
{
    void *p;

    (void)env;
    (void)cls;
    p = shmat(shmid, NULL, SHM_RDONLY);
    if (p == (void *)-1) {
        return -errno;
    }
    return (jlong)(intptr_t)p;
}

EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_shmDetach(JNIEnv *env, jclass cls,
                                          jlong address)
{
    (void)env;
    (void)cls;
    return shmdt((void *)(intptr_t)address) == 0 ? 0 : -errno;
}

/* ---------------------------------------------------------------- misc */

/* A direct ByteBuffer over native memory (for reads by the JIT's copies). */
EXPORT JNIEXPORT jobject JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_view(JNIEnv *env, jclass cls, jlong address,
                                     jlong length)
{
    (void)cls;
    return (*env)->NewDirectByteBuffer(env, (void *)(intptr_t)address, length);
}

EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_pid(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    return (jint)getpid();
}

EXPORT JNIEXPORT jint JNICALL
Java_org_hdfsrdma_ucx_NativeUcx_euid(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    return (jint)geteuid();
}
