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
 *
 * Does not link libjvm; everything goes through JNIEnv.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
