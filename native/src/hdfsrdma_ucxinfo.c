/*
 * libhdfsrdma_ucxinfo: introspection helpers for the Java bridge
 * (class org.hdfsrdma.ucx.NativeIntrospection). The Java side passes the
 * raw ucp_ep_h / ucp_worker_h pointers that JUCX exposes through
 * getNativeId(). Does not link libjvm; everything goes through JNIEnv.
 */
#define _GNU_SOURCE
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucp/api/ucp.h>

#define EXPORT __attribute__((visibility("default")))

/* Run a ucp_*_print_info style printer into a Java String. */
static jstring print_to_string(JNIEnv *env, void (*printer)(void *, FILE *),
                               void *handle)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) {
        jclass ex = (*env)->FindClass(env, "java/lang/OutOfMemoryError");
        if (ex != NULL) {
            (*env)->ThrowNew(env, ex, "open_memstream failed");
        }
        return NULL;
    }
    printer(handle, f);
    fclose(f);
    /* UCX prints ASCII only, so modified UTF-8 is fine. */
    jstring s = (*env)->NewStringUTF(env, buf != NULL ? buf : "");
    free(buf);
    return s;
}

static void ep_printer(void *h, FILE *f)
{
    ucp_ep_print_info((ucp_ep_h)h, f);
}

static void worker_printer(void *h, FILE *f)
{
    ucp_worker_print_info((ucp_worker_h)h, f);
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_ucxVersion(JNIEnv *env, jclass cls)
{
    (void)cls;
    return (*env)->NewStringUTF(env, ucp_get_version_string());
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_endpointInfo(JNIEnv *env, jclass cls,
                                                       jlong ep)
{
    (void)cls;
    if (ep == 0) {
        return NULL;
    }
    return print_to_string(env, ep_printer, (void *)(intptr_t)ep);
}

EXPORT JNIEXPORT jstring JNICALL
Java_org_hdfsrdma_ucx_NativeIntrospection_workerInfo(JNIEnv *env, jclass cls,
                                                     jlong worker)
{
    (void)cls;
    if (worker == 0) {
        return NULL;
    }
    return print_to_string(env, worker_printer, (void *)(intptr_t)worker);
}
