/*
 * trim(): glibc's malloc_trim(0), for the broker's native-memory collector (src/util/reclaim.ts).
 * glibc returns freed memory to the system only from the top of its main heap; memory freed in
 * the middle (a slow subscriber's queued frames, freed among longer-lived allocations) stays
 * resident until malloc_trim walks the free lists and releases their whole pages
 * (docs/perf.md, the soak). Returns true when memory was released; false where the C library
 * is not glibc (nothing to call).
 */
#include <node_api.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
