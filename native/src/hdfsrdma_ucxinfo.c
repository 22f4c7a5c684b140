/*
 * libhdfsrdma_ucxinfo: JNI helpers of org.hdfsrdma.ucx.NativeIntrospection.
 *
 * Two jobs:
 *  - prepare the process environment before the Java side loads UCX
 *    (setenvIfUnset, isUcxLoaded). libucs installs SIGSEGV/SIGBUS/... handlers
 *    in its load-time constructor; in a JVM they catch the faults the JIT uses
 *    for implicit null checks and kill the process. UCX_HANDLE_ERRORS=none in
 *    the environment before libucs loads prevents that, so this library must
 *    not depend on UCX itself: it has no DT_NEEDED on libucp/libucs.
 *  - describe a worker or an endpoint (which transports UCX chose), looking
 *    ucp_*_print_info up in the already loaded libucp at call time.
 *  - tell whether UCX's memory hooks rewrote libc's code (patchedLibc).
 *
 * Does not link libjvm; everything goes through JNIEnv.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <jni.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*print_fn)(void *handle, FILE *stream);
typedef const char *(*version_fn)(void);

/* A symbol of the libucp this process already loaded, or NULL. */
static void *ucp_symbol(const char *name)
{
    void *lib = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
    void *sym;

    if (lib == NULL) {
        return NULL;
    }
    sym = dlsym(lib, name);
    dlclose(lib); /* drops only the reference NOLOAD took */
    return sym;
}

static void throw_oom(JNIEnv *env, const char *msg)
{
    jclass ex = (*env)->FindClass(env, "java/lang/OutOfMemoryError");
    if (ex != NULL) {
        (*env)->ThrowNew(env, ex, msg);
    }
}

/* Runs a ucp_*_print_info style printer into a Java String. */
static jstring print_to_string(JNIEnv *env, const char *printer_name,
                               void *handle)
{
    print_fn printer;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    jstring s;

    if (handle == NULL) {
        return NULL;
    }
    printer = (print_fn)ucp_symbol(printer_name);
    if (printer == NULL) {
        return NULL;
    }
    f = open_memstream(&buf, &len);
    if (f == NULL) {
        throw_oom(env, "open_memstream failed");
        return NULL;
    }
    printer(handle, f);
    fclose(f);
    /* UCX prints ASCII only, so modified UTF-8 is fine. */
    s = (*env)->NewStringUTF(env, buf != NULL ? buf : "");
    free(buf);
    return s;
}

EXPORT JNIEXPORT jboolean JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_setenvIfUnset(JNIEnv *env,
                                                        jclass cls,
                                                        jstring name,
                                                        jstring value)
{
    const char *n;
    const char *v;
    jboolean set = JNI_FALSE;

    (void)cls;
    if (name == NULL || value == NULL) {
        return JNI_FALSE;
    }
    n = (*env)->GetStringUTFChars(env, name, NULL);
    v = (*env)->GetStringUTFChars(env, value, NULL);
    if (n != NULL && v != NULL && getenv(n) == NULL) {
        set = setenv(n, v, 0) == 0 ? JNI_TRUE : JNI_FALSE;
    }
    if (v != NULL) {
        (*env)->ReleaseStringUTFChars(env, value, v);
    }
    if (n != NULL) {
        (*env)->ReleaseStringUTFChars(env, name, n);
    }
    return set;
}

EXPORT JNIEXPORT jboolean JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_isUcxLoaded(JNIEnv *env, jclass cls)
{
    void *lib = dlopen("libucs.so.0", RTLD_NOW | RTLD_NOLOAD);

    (void)env;
    (void)cls;
    if (lib == NULL) {
        return JNI_FALSE;
    }
    dlclose(lib);
    return JNI_TRUE;
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_ucxVersion(JNIEnv *env, jclass cls)
{
    version_fn version = (version_fn)ucp_symbol("ucp_get_version_string");

    (void)cls;
    return version == NULL ? NULL : (*env)->NewStringUTF(env, version());
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_endpointInfo(JNIEnv *env, jclass cls,
                                                       jlong ep)
{
    (void)cls;
    return print_to_string(env, "ucp_ep_print_info", (void *)(intptr_t)ep);
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_contextInfo0(JNIEnv *env, jclass cls,
                                                      jlong context)
{
    (void)cls;
    return print_to_string(env, "ucp_context_print_info",
                           (void *)(intptr_t)context);
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_workerInfo(JNIEnv *env, jclass cls,
                                                     jlong worker)
{
    (void)cls;
    return print_to_string(env, "ucp_worker_print_info",
                           (void *)(intptr_t)worker);
}

/*
 * libc's functions whose first instructions libucm overwrites in place
 * ("bistro" hooks) when UCX's memory events are on: the functions through
 * which memory leaves a process.
 */
static const char *const hooked_functions[] = {
    "mmap", "munmap", "mremap", "madvise", "shmat", "shmdt", "brk", "sbrk",
    NULL
};

/* Bytes compared per function: more than any hook libucm writes. */
#define CODE_BYTES 32

struct file_position {
    uintptr_t address; /* in: a code address */
    off_t offset;      /* out: where its bytes are in its object's file */
    int found;
};

static int find_file_position(struct dl_phdr_info *info, size_t size,
                              void *arg)
{
    struct file_position *q = arg;
    int i;

    (void)size;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && q->address >= start &&
            q->address + CODE_BYTES <= start + ph->p_filesz) {
            q->offset = (off_t)(ph->p_offset + (q->address - start));
            q->found  = 1;
            return 1;
        }
    }
    return 0;
}

/* 1 when the code at fn differs from its object's file, 0 when not, -1 when
 * it cannot tell. */
static int code_rewritten(void *fn)
{
    struct file_position q = {(uintptr_t)fn, 0, 0};
    unsigned char on_disk[CODE_BYTES];
    Dl_info info;
    ssize_t n;
    int fd;

    if (!dladdr(fn, &info) || info.dli_fname == NULL) {
        return -1;
    }
    dl_iterate_phdr(find_file_position, &q);
    if (!q.found) {
        return -1;
    }
    fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    n = pread(fd, on_disk, sizeof(on_disk), q.offset);
    close(fd);
    if (n != (ssize_t)sizeof(on_disk)) {
        return -1;
    }
    return memcmp(fn, on_disk, sizeof(on_disk)) != 0;
}

/*
 * The names of libc's memory functions whose code in this process differs
 * from libc's file, space separated ("" when none), or null when it cannot
 * tell (no libc.so.6, an unreadable file).
 */
EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_patchedLibc(JNIEnv *env, jclass cls)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    char names[128] = "";
    int i;

    (void)cls;
    if (libc == NULL) {
        return NULL;
    }
    for (i = 0; hooked_functions[i] != NULL; i++) {
        void *fn = dlsym(libc, hooked_functions[i]);
        int rewritten = fn == NULL ? -1 : code_rewritten(fn);

        if (rewritten < 0) {
            dlclose(libc);
            return NULL;
        }
        if (rewritten) {
            if (names[0] != '\0') {
                strcat(names, " ");
            }
            strcat(names, hooked_functions[i]);
        }
    }
    dlclose(libc);
    return (*env)->NewStringUTF(env, names);
}
