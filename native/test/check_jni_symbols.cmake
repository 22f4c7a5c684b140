# Checks that LIB exports exactly the JNI entry points of
# org.hdfsrdma.ucx.NativeIntrospection and org.hdfsrdma.ucx.NativeUcx (and
# JNI_OnLoad), and depends on neither libjvm nor UCX
# (it must load before libucs, whose constructor installs signal handlers).
# Usage: cmake -DLIB=path/to/libhdfsrdma.so -P check_jni_symbols.cmake
find_program(NM nm REQUIRED)
find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D failed on ${LIB}")
endif()
string(REGEX MATCHALL "Java_[A-Za-z0-9_]+" syms "${out}")
list(SORT syms)
message("exported JNI symbols (nm -D ${LIB}):")
foreach(s ${syms})
  message("  ${s}")
endforeach()
set(want
  Java_org_hdfsrdma_ucx_NativeIntrospection_contextInfo0
  Java_org_hdfsrdma_ucx_NativeIntrospection_endpointInfo
  Java_org_hdfsrdma_ucx_NativeIntrospection_isUcxLoaded
  Java_org_hdfsrdma_ucx_NativeIntrospection_patchedLibc
  Java_org_hdfsrdma_ucx_NativeIntrospection_setenvIfUnset
  Java_org_hdfsrdma_ucx_NativeIntrospection_ucxVersion
  Java_org_hdfsrdma_ucx_NativeIntrospection_workerInfo
  Java_org_hdfsrdma_ucx_NativeUcx_amSend
  Java_org_hdfsrdma_ucx_NativeUcx_bind
  Java_org_hdfsrdma_ucx_NativeUcx_euid
  Java_org_hdfsrdma_ucx_NativeUcx_eventFd
  Java_org_hdfsrdma_ucx_NativeUcx_get
  Java_org_hdfsrdma_ucx_NativeUcx_installHandlers
  Java_org_hdfsrdma_ucx_NativeUcx_pid
  Java_org_hdfsrdma_ucx_NativeUcx_progress
  Java_org_hdfsrdma_ucx_NativeUcx_releaseHandlers
  Java_org_hdfsrdma_ucx_NativeUcx_rkeyDestroy
  Java_org_hdfsrdma_ucx_NativeUcx_rkeyPointer
  Java_org_hdfsrdma_ucx_NativeUcx_rkeyUnpack
  Java_org_hdfsrdma_ucx_NativeUcx_shmAttach
  Java_org_hdfsrdma_ucx_NativeUcx_shmDetach
  Java_org_hdfsrdma_ucx_NativeUcx_shmStat
  Java_org_hdfsrdma_ucx_NativeUcx_signal
  Java_org_hdfsrdma_ucx_NativeUcx_slotStatus
  Java_org_hdfsrdma_ucx_NativeUcx_statusString
  Java_org_hdfsrdma_ucx_NativeUcx_view
  Java_org_hdfsrdma_ucx_NativeUcx_waitEvents)
if(NOT "${syms}" STREQUAL "${want}")
  message(FATAL_ERROR "expected exactly: ${want}")
endif()
# nothing else of ours exported (only T symbols that are JNI names)
string(REGEX MATCHALL "[0-9a-f]+ T [A-Za-z0-9_]+" tsyms "${out}")
foreach(t ${tsyms})
  if(NOT t MATCHES " T Java_" AND NOT t MATCHES " T _(init|fini)$"
      AND NOT t MATCHES " T JNI_OnLoad$")
    message(FATAL_ERROR "unexpected exported function: ${t}")
  endif()
endforeach()
execute_process(COMMAND ${READELF} -d ${LIB} OUTPUT_VARIABLE dyn)
if(dyn MATCHES "libjvm")
  message(FATAL_ERROR "${LIB} links libjvm")
endif()
if(dyn MATCHES "libuc[pst]")
  message(FATAL_ERROR "${LIB} links UCX; it must load before UCX does")
endif()
message("OK: exactly the NativeIntrospection and NativeUcx symbols, no libjvm, no UCX")
