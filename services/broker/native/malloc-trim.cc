/*
 * For the broker's native-memory collector (src/util/reclaim.ts):
 * - reduceHeap(): V8's low-memory notification, the memory-reducing full collections that also
 *   shrink the young generation (a plain full collection leaves it at its grown size, up to
 *   32 MiB); on the JS thread, as V8 requires.
 * - trim(): glibc's malloc_trim(0) on a libuv threadpool thread, answered as a Promise<boolean>
 *   (whether memory was released).
 * glibc returns freed memory to the system only from the top of its main heap; memory freed in
 * the middle (a slow subscriber's queued frames, freed among longer-lived allocations) stays
 * resident until malloc_trim walks the free lists and releases their whole pages
 * (docs/perf.md, the soak). That walk and its page releases took 0.5-1.2 s of system time for
 * 80-200 MiB on the shared VM, so it runs off the event loop. Where the C library is not glibc
 * there is nothing to call and the answer is false.
 */
#include <node_api.h>
#include <v8.h>

#include <cstdlib>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int released;
} trim_job;

static void execute(napi_env env, void *data) {
  (void)env;
  trim_job *job = static_cast<trim_job *>(data);
#ifdef __GLIBC__
  job->released = malloc_trim(0);
#else
  job->released = 0;
#endif
}

static void complete(napi_env env, napi_status status, void *data) {
  trim_job *job = static_cast<trim_job *>(data);
  napi_value answer;
  napi_get_boolean(env, status == napi_ok && job->released != 0, &answer);
  napi_resolve_deferred(env, job->deferred, answer);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  trim_job *job = static_cast<trim_job *>(calloc(1, sizeof *job));
  napi_value promise, name;
  if (job == NULL) {
    napi_throw_error(env, NULL, "malloc_trim: no memory for the job");
    return NULL;
  }
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "felix:malloc_trim", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    if (job->work != NULL) napi_delete_async_work(env, job->work);
    free(job); /* the promise, if made, is never settled; the caller sees the throw */
    napi_throw_error(env, NULL, "malloc_trim: could not queue the job");
    return NULL;
  }
  return promise;
}

static napi_value reduce_heap(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->LowMemoryNotification();
  return nullptr;
}

static bool export_fn(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &fn) == napi_ok &&
         napi_set_named_property(env, exports, name, fn) == napi_ok;
}

NAPI_MODULE_INIT() {
  if (!export_fn(env, exports, "trim", trim)) return nullptr;
  if (!export_fn(env, exports, "reduceHeap", reduce_heap)) return nullptr;
  return exports;
}
