/* Host services handed to plugins (the ptk_host table), and atomic report
 * files: written to a temporary name in the output directory, renamed into
 * place only when complete. */
#include "session/session.h"
#include "ref/ref.h"

#include <marshal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The legacy backend hands CPython's frame over. sys.monitoring passes
 * none: the event's frame is the one running while the callback runs (the
 * caller's, for C events, as on the legacy backend), made on demand. */
static PyFrameObject *
event_frame(const ptk_event *ev)
{
    return ev->frame_ != NULL ? ev->frame_ : PyEval_GetFrame();
}

static const ptk_option_value *
host_option(const ptk_init_args *args, const char *name)
{
    for (size_t i = 0; args && i < args->noptions; i++) {
        if (strcmp(args->options[i].name, name) == 0) {
            return &args->options[i];
        }
    }
    return NULL;
}

static const ptk_thread *
host_current_thread(void)
{
    ptk__thread *t = ptk__thread_get();
    return t ? &t->pub : NULL;
}

static size_t
host_thread_count(void)
{
    return ptk__thread_count();
}

static const ptk_thread *
host_thread_at(size_t i)
{
    ptk__thread *t = ptk__thread_at(i);
    return t ? &t->pub : NULL;
}

static void
host_log(ptk_plugin_ctx *ctx, const char *fmt, ...)
{
    FILE *out = ctx && ctx->session && ctx->session->summary
                    ? ctx->session->summary
                    : stderr;
    va_list ap;
    va_start(ap, fmt);
    fprintf(out, "pytracekit: %s: ", ctx && ctx->name ? ctx->name : "?");
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
}

static int
host_fail(ptk_plugin_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = ptk__fail_notev(ctx, code, fmt, ap);
    va_end(ap);
    return rc;
}

/* Report files written in this process, by the instance that wrote them,
 * until that instance is freed: a second instance of a plugin (in the
 * session or another one with the same directory) does not replace the
 * first one's report. */
typedef struct report_owner {
    char *path;
    uint64_t id;
    struct report_owner *next;
} report_owner;

static report_owner *report_owners;

static uint64_t
report_owner_of(const char *path)
{
    for (report_owner *o = report_owners; o; o = o->next) {
        if (strcmp(o->path, path) == 0) {
            return o->id;
        }
    }
    return 0;
}

void
ptk__report_release(uint64_t id)
{
    for (report_owner **pp = &report_owners; *pp;) {
        report_owner *o = *pp;
        if (o->id == id) {
            *pp = o->next;
            free(o->path);
            free(o);
        }
        else {
            pp = &o->next;
        }
    }
}

/* DIR/NAME, or DIR/BASE-N.EXT for the first N >= 2 that no other instance
 * of this process has written; the name is claimed for `id`. */
static char *
report_claim(const char *dir, const char *filename, uint64_t id, int *fresh)
{
    *fresh = 0;
    char *path = ptk__asprintf("%s/%s", dir, filename);
    const char *dot = strrchr(filename, '.');
    int base = dot && dot != filename ? (int)(dot - filename)
                                      : (int)strlen(filename);
    /* run.json is the session's manifest (process.c), no plugin's */
    int reserved = id != 0 && strcmp(filename, "run.json") == 0;
    for (int n = 2; path != NULL; n++) {
        uint64_t owner = n == 2 && reserved ? UINT64_MAX : report_owner_of(path);
        if (owner == id) {
            return path;
        }
        if (owner == 0) {
            *fresh = 1;
            report_owner *o = malloc(sizeof *o);
            if (o == NULL) {
                return path; /* unclaimed, still written */
            }
            o->path = ptk__strdup(path);
            o->id = id;
            o->next = report_owners;
            if (o->path == NULL) {
                free(o);
                return path;
            }
            report_owners = o;
            return path;
        }
        free(path);
        path = ptk__asprintf("%s/%.*s-%d%s", dir, base, filename, n,
                             filename + base);
    }
    return NULL;
}

/* The process's umask, read without changing it: umask(0); umask(old)
 * would let another thread create a world-writable file in between. */
static mode_t
current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    mode_t mask = 022; /* no /proc: the usual one */
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "Umask:", 6) == 0) {
            mask = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return mask;
}

/* The claimed path of `filename` for ctx's instance, saying so when another
 * instance has the name (NULL: out of memory). */
static char *
claim_and_say(ptk_plugin_ctx *ctx, const char *dir, const char *filename)
{
    int fresh = 0;
    char *path = ctx ? report_claim(dir, filename, ctx->id, &fresh)
                     : ptk__asprintf("%s/%s", dir, filename);
    const char *name = path ? strrchr(path, '/') + 1 : filename;
    if (ctx && path && fresh && strcmp(name, filename) != 0) {
        FILE *say = ctx->session && ctx->session->summary
                        ? ctx->session->summary
                        : stderr;
        fprintf(say,
                "pytracekit: %s/%s is another plugin instance's report: this "
                "one ('%s') is %s\n",
                dir, filename, ctx->name, path);
    }
    return path;
}

/* A new temporary file in dir, O_EXCL (never through a planted symlink),
 * with the mode any new file gets; its name in *tmp. */
static int
temp_create(const char *dir, const char *name, char **tmp)
{
    /* The writer's identity in the name lets the next session there remove
     * it if this process dies before the rename (process.c). */
    *tmp = ptk__process_temp_name(dir, name);
    int fd = *tmp ? mkostemp(*tmp, O_CLOEXEC) : -1;
    if (fd >= 0) {
        /* mkstemp makes the file 0600; a report gets the mode any new
         * file gets (0666 less the umask). */
        fchmod(fd, 0666 & ~current_umask());
    }
    return fd;
}

static const char *
session_dir(ptk_plugin_ctx *ctx)
{
    return ctx && ctx->session ? ctx->session->output_dir : ".";
}

static int
host_report_claim(ptk_plugin_ctx *ctx, const char *name, char *buf,
                  size_t size)
{
    if (ctx == NULL || name == NULL || buf == NULL || size == 0 ||
        name[0] == '\0' || strchr(name, '/') != NULL ||
        strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        return PTK_EINVAL;
    }
    char *path = claim_and_say(ctx, session_dir(ctx), name);
    if (path == NULL) {
        return PTK_ENOMEM;
    }
    int rc = strlen(path) < size ? PTK_OK : PTK_EINVAL;
    if (rc == PTK_OK) {
        memcpy(buf, path, strlen(path) + 1);
    }
    free(path);
    return rc;
}

static int
host_report_create(ptk_plugin_ctx *ctx, const char *name, char *buf,
                   size_t size)
{
    int rc = host_report_claim(ctx, name, buf, size);
    if (rc < 0) {
        return rc;
    }
    int fd = ptk__create_new(session_dir(ctx), strrchr(buf, '/') + 1);
    if (fd < 0) {
        return fd;
    }
    ptk__process_note_written(ctx, strrchr(buf, '/') + 1);
    return fd;
}

int
ptk__create_new(const char *dir, const char *name)
{
    char *tmp = NULL;
    char *path = ptk__asprintf("%s/%s", dir, name);
    int fd = path ? temp_create(dir, name, &tmp) : -1;
    if (fd < 0 || rename(tmp, path) != 0) {
        int rc = errno == ENOMEM ? PTK_ENOMEM : PTK_EIO;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        free(path);
        return rc;
    }
    free(tmp);
    free(path);
    return fd;
}

typedef struct report_file {
    FILE *fp;
    char *tmp;
    char *final;
    ptk_plugin_ctx *ctx;
} report_file;

static FILE *
host_report_open(ptk_plugin_ctx *ctx, const char *filename, void **token)
{
    *token = NULL;
    const char *dir = session_dir(ctx);
    if (strchr(filename, '/') != NULL) {
        host_fail(ctx, PTK_EINVAL, "report name '%s' must not contain '/'",
                  filename);
        return NULL;
    }
    report_file *rf = calloc(1, sizeof *rf);
    if (rf == NULL) {
        host_fail(ctx, PTK_ENOMEM, "cannot write report %s: out of memory",
                  filename);
        return NULL;
    }
    rf->final = claim_and_say(ctx, dir, filename);
    const char *name = rf->final ? strrchr(rf->final, '/') + 1 : filename;
    rf->ctx = ctx;
    int fd = rf->final ? temp_create(dir, name, &rf->tmp) : -1;
    if (fd < 0 || (rf->fp = fdopen(fd, "w")) == NULL) {
        host_fail(ctx, PTK_EIO, "cannot write report %s: %s",
                  rf->final ? rf->final : filename, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(rf->tmp);
        }
        free(rf->tmp);
        free(rf->final);
        free(rf);
        return NULL;
    }
    *token = rf;
    return rf->fp;
}

static int
host_report_commit(void *token, int keep)
{
    report_file *rf = token;
    if (rf == NULL) {
        return PTK_EINVAL;
    }
    int rc = PTK_OK;
    if (ferror(rf->fp)) {
        keep = 0;
        rc = PTK_EIO;
    }
    if (fclose(rf->fp) != 0) {
        keep = 0;
        rc = PTK_EIO;
    }
    if (keep) {
        if (rename(rf->tmp, rf->final) != 0) {
            rc = PTK_EIO;
            unlink(rf->tmp);
        }
        else {
            ptk__process_note_written(rf->ctx, strrchr(rf->final, '/') + 1);
        }
    }
    else {
        unlink(rf->tmp);
    }
    if (rc < 0) {
        host_fail(rf->ctx, rc, "cannot write report %s: %s", rf->final,
                  strerror(errno));
    }
    free(rf->tmp);
    free(rf->final);
    free(rf);
    return rc;
}

static int
host_report_write_object(ptk_plugin_ctx *ctx, const char *filename,
                         PyObject *obj, int format)
{
    PyObject *data = NULL;
    if (format != PTK_FMT_JSON && format != PTK_FMT_MARSHAL) {
        return host_fail(ctx, PTK_EINVAL, "unknown report format %d", format);
    }
    if (format == PTK_FMT_JSON) {
        /* A JSON object says which run it comes from (process.c). */
        PyObject *marked = NULL;
        if (PyDict_Check(obj) && ctx && ctx->session &&
            PyDict_GetItemString(obj, "run") == NULL) {
            PyObject *id = ptk__process_identity(ctx->session);
            marked = id ? PyDict_Copy(obj) : NULL;
            if (marked == NULL || PyDict_SetItemString(marked, "run", id) < 0) {
                Py_CLEAR(marked);
            }
            Py_XDECREF(id);
            PyErr_Clear();
        }
        if (marked != NULL) {
            obj = marked;
        }
        /* json.dumps(obj, indent=1), written in C (json.c): importing
         * json was most of the end of a short run */
        void *token;
        FILE *fp = host_report_open(ctx, filename, &token);
        if (fp == NULL) {
            Py_XDECREF(marked);
            return PTK_EIO;
        }
        int jrc = ptk__json_write(fp, obj, 1);
        Py_XDECREF(marked);
        int ok = jrc == 0 && fputc('\n', fp) != EOF;
        int rc = host_report_commit(token, ok);
        if (jrc == -1) {
            char *why = ptk__format_exception();
            rc = host_fail(ctx, PTK_EPYTHON, "cannot encode %s: %s", filename, why ? why : "?");
            free(why);
        }
        else if (!ok && rc == PTK_OK) {
            rc = host_fail(ctx, PTK_EIO, "cannot write report %s", filename);
        }
        return rc;
    }
    data = PyMarshal_WriteObjectToString(obj, Py_MARSHAL_VERSION);
    if (data == NULL) {
        char *why = ptk__format_exception();
        int rc = host_fail(ctx, PTK_EPYTHON, "cannot encode %s: %s", filename,
                           why ? why : "?");
        free(why);
        return rc;
    }
    void *token;
    FILE *fp = host_report_open(ctx, filename, &token);
    if (fp == NULL) {
        Py_DECREF(data);
        return PTK_EIO;
    }
    int ok = fwrite(PyBytes_AS_STRING(data), 1, (size_t)PyBytes_GET_SIZE(data), fp) ==
             (size_t)PyBytes_GET_SIZE(data);
    Py_DECREF(data);
    int rc = host_report_commit(token, ok);
    if (!ok && rc == PTK_OK) {
        rc = host_fail(ctx, PTK_EIO, "cannot write report %s", filename);
    }
    return rc;
}

static int
host_ref_status(ptk_ref_status *out)
{
    return ptk__ref_status(out);
}

static int
host_current_lasti(PyCodeObject *code)
{
#if PTK_HAVE_TSTATE_CURRENT_FRAME || PTK_HAVE_TSTATE_CFRAME
    PyThreadState *ts = PyThreadState_Get();
#if PTK_HAVE_TSTATE_CURRENT_FRAME
    struct _PyInterpreterFrame *f = ts->current_frame;
#else
    struct _PyInterpreterFrame *f = ts->cframe ? ts->cframe->current_frame : NULL;
#endif
    if (f == NULL || code == NULL) {
        return -1;
    }
    PyObject *c = PyUnstable_InterpreterFrame_GetCode(f); /* a new reference */
    int same = c == (PyObject *)code;
    Py_XDECREF(c);
    return same ? PyUnstable_InterpreterFrame_GetLasti(f) : -1;
#else
    /* Before 3.12 every backend keeps frame pointers in the stack. */
    (void)code;
    return -1;
#endif
}

static void **
host_code_slot(ptk_plugin_ctx *ctx, PyCodeObject *code)
{
    if (ctx == NULL || code == NULL || ctx->slot < 0) {
        return NULL;
    }
    return ptk__code_slot(code, (uint32_t)ctx->slot);
}

static int
host_event_offset(const ptk_event *ev)
{
    return ev ? ptk__event_lasti(ev) : -1;
}

static int
host_subscribe_filter(ptk_plugin_ctx *ctx, const char *spec)
{
    if (ctx == NULL || spec == NULL || ctx->initialised) {
        return PTK_EINVAL; /* only during init */
    }
    char *t = ptk__asprintf("%s%s%s", ctx->filter_extra ? ctx->filter_extra : "",
                            ctx->filter_extra ? "," : "", spec);
    if (t == NULL) {
        return PTK_ENOMEM;
    }
    free(ctx->filter_extra);
    ctx->filter_extra = t;
    return PTK_OK;
}

static const char *
host_run_identity(ptk_plugin_ctx *ctx)
{
    if (ctx == NULL || ctx->session == NULL) {
        return NULL;
    }
    if (ctx->identity_json == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *id = ptk__process_identity(ctx->session);
        ctx->identity_json = id ? ptk__json_text(id, PTK_JSON_SPACED) : NULL;
        Py_XDECREF(id);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    return ctx->identity_json;
}

static int
host_publish(ptk_plugin_ctx *ctx, const char *name, const void *service)
{
    if (ctx == NULL || name == NULL) {
        return PTK_EINVAL;
    }
    char *n = service != NULL ? ptk__strdup(name) : NULL;
    if (service != NULL && n == NULL) {
        return PTK_ENOMEM;
    }
    free(ctx->service_name);
    ctx->service_name = n;
    ctx->service = service;
    return PTK_OK;
}

static const void *
host_lookup(ptk_plugin_ctx *ctx, const char *name)
{
    if (ctx == NULL || ctx->session == NULL || name == NULL) {
        return NULL;
    }
    for (ptk_plugin_ctx *c = ctx->session->plugins; c; c = c->next) {
        if (c->initialised && !c->failed && !c->removed && c->service_name &&
            strcmp(c->service_name, name) == 0) {
            return c->service;
        }
    }
    return NULL;
}

const ptk_host ptk__host = {
    .struct_size = sizeof(ptk_host),
    .abi_major = PTK_ABI_MAJOR,
    .abi_minor = PTK_ABI_MINOR,
    .version = PTK_VERSION_STRING,
    .event_frame = event_frame,
    .option = host_option,
    .current_thread = host_current_thread,
    .thread_count = host_thread_count,
    .thread_at = host_thread_at,
    .clock_ns = ptk__clock_ns,
    .log = host_log,
    .fail = host_fail,
    .report_open = host_report_open,
    .report_commit = host_report_commit,
    .report_write_object = host_report_write_object,
    .strerror = ptk_strerror,
    .ref_status = host_ref_status,
    .current_lasti = host_current_lasti,
    .code_slot = host_code_slot,
    .event_parse_mask = ptk_event_parse_mask,
    .event_offset = host_event_offset,
    .subscribe_filter = host_subscribe_filter,
    .run_identity = host_run_identity,
    .publish = host_publish,
    .lookup = host_lookup,
    .report_claim = host_report_claim,
    .report_create = host_report_create,
    .context = ptk__context_get,
    .running_task = ptk__running_task,
    .json_write = ptk__json_write,
};

int
ptk_context_set(const char *name)
{
    return ptk__context_set(name);
}

const char *
ptk_context_current(uint64_t *id)
{
    return ptk__context_get(id);
}

const ptk_host *
ptk_host_services(void)
{
    return &ptk__host;
}
