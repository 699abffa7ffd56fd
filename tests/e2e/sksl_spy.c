/* Preloaded (LD_PRELOAD) into every process the end-to-end tests start; acts only in
 * WebKit's web process. It watches strtoull, which Skia's shader compiler calls for
 * each integer in a shader's source, and writes down each call WebKit makes on the
 * web process's main thread to the file named by CAIRN_SKSL_SPY_LOG.
 *
 * Why: without compositing (src-tauri/rendering.rs) the page is painted on that
 * thread, and Skia treats a non-zero errno after strtoull as a broken shader and
 * aborts the page. errno can change there under it (most likely through the signal
 * JavaScriptCore's collector pauses the thread with), so the page must never make Skia
 * compile a shader on that thread: a box-shadow with a small blur is what did. The
 * harness fails a test whose page did.
 *
 * CAIRN_SKSL_SPY_CLOBBER=TEXT (or `*` for every integer) sets errno after WebKit
 * parses TEXT on that thread, as a signal arriving right then would: with a blurred
 * shadow on the page, `=28` brings back the abort seen once in CI, word for word. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef unsigned long long (*strtoull_fn)(const char *, char **, int);

/* The web process's main thread: its thread id is the process id. */
static int on_the_pages_main_thread(void) {
    if (syscall(SYS_gettid) != getpid()) return 0;
    char name[32] = {0};
    FILE *comm = fopen("/proc/self/comm", "r");
    if (!comm) return 0;
    int read = fgets(name, sizeof name, comm) != NULL;
    fclose(comm);
    return read && strncmp(name, "WebKitWebProces", 15) == 0;
}

static int called_from_webkit(void *caller) {
    Dl_info info;
    return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libwebkit2gtk");
}

unsigned long long strtoull(const char *text, char **end, int base) {
    static strtoull_fn real;
    if (!real) real = (strtoull_fn)dlsym(RTLD_NEXT, "strtoull");
    unsigned long long value = real(text, end, base);
    int after = errno;
    if (on_the_pages_main_thread() && called_from_webkit(__builtin_return_address(0))) {
        const char *log = getenv("CAIRN_SKSL_SPY_LOG");
        FILE *out = log ? fopen(log, "a") : NULL;
        if (out) {
            fprintf(out, "%s\n", text);
            fclose(out);
        }
        const char *clobber = getenv("CAIRN_SKSL_SPY_CLOBBER");
        if (clobber && (strcmp(clobber, "*") == 0 || strcmp(clobber, text) == 0)) after = EINTR;
    }
    errno = after;
    return value;
}
