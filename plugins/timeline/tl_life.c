/* timeline: options, start, finish, report, fini; the plugin's entry. */
#include "tl_private.h"
#include "tl_ring.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

enum { OPT_FORMAT, OPT_BUFFER_KB, OPT_FLUSH_MS, OPT_MIN_DURATION,
       OPT_BUILTINS, OPT_EXCEPTIONS, OPT_TASKS, OPT_GC, OPT_COUNTERS,
       OPT_OBJECTS, OPT_BLOCKING, OPT_RING, OPT_RING_MB, OPT_TRIGGER, OPT_COUNT };

static const ptk_option_spec tl_options[] = {
    [OPT_FORMAT] = {"format", PTK_OPT_CHOICE, "perfetto",
                    "perfetto (timeline.perfetto-trace, protobuf) or json "
                    "(timeline.json, Chrome trace events)", "perfetto|json"},
    [OPT_BUFFER_KB] = {"buffer_kb", PTK_OPT_INT, "4096",
                       "size of each of the two output buffers, KiB (the "
                       "memory bound); events that find both full are "
                       "dropped and counted", NULL},
    [OPT_FLUSH_MS] = {"flush_ms", PTK_OPT_INT, "500",
                      "hand a non-empty buffer to the writer at least this "
                      "often (0: only when full)", NULL},
    [OPT_MIN_DURATION] = {"min_duration", PTK_OPT_STRING, "0",
                          "leave out spans shorter than this (e.g. 50us, "
                          "1.5ms; a bare number is microseconds)", NULL},
    [OPT_BUILTINS] = {"builtins", PTK_OPT_BOOL, "true",
                      "C functions and methods as spans too", NULL},
    [OPT_EXCEPTIONS] = {"exceptions", PTK_OPT_BOOL, "true",
                        "exceptions as instant events", NULL},
    [OPT_TASKS] = {"tasks", PTK_OPT_BOOL, "true",
                   "asyncio: a Task's coroutine spans on the Task's track", NULL},
    [OPT_GC] = {"gc", PTK_OPT_BOOL, "true",
                "garbage collections as spans, and pause time per second as a track (gc.callbacks)", NULL},
    [OPT_COUNTERS] = {"counters", PTK_OPT_BOOL, "true",
                      "an events-per-second track", NULL},
    [OPT_OBJECTS] = {"objects", PTK_OPT_INT, "5",
                     "live objects of the N types with the most, one counter "
                     "track each, when reftrack runs in the same session "
                     "(CPython 3.13+); 0: none", NULL},
    [OPT_BLOCKING] = {"blocking", PTK_OPT_STRING, "0",
                      "list the asyncio Task steps that held their loop at least this "
                      "long (e.g. 100ms), with the stack of their slowest call; 0: off",
                      NULL},
    [OPT_RING] = {"ring", PTK_OPT_DOUBLE, "0",
                  "flight recorder: keep only the spans that ended in the "
                  "last SECONDS (fractions allowed) in bounded memory, and "
                  "write them on report, an uncaught exception or a trigger "
                  "(0: stream the whole run)", NULL},
    [OPT_RING_MB] = {"ring_mb", PTK_OPT_INT, "64",
                     "with ring: at most this many MiB of spans (32 bytes "
                     "each); at the cap the oldest go, though in the window",
                     NULL},
    [OPT_TRIGGER] = {"trigger", PTK_OPT_STRING, "",
                     "with ring: GLOB:MS, write the ring when a function "
                     "matching GLOB returns after MS milliseconds or more "
                     "(at most once per window)", NULL},
    [OPT_COUNT] = {NULL, 0, NULL, NULL, NULL},
};

/* "50us", "1.5ms", "2s", "300ns", "7" (µs) -> ns; -1 if malformed. */
static int64_t
tl_parse_duration(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || v < 0) {
        return -1;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    double mul = 1e3;
    if (*end == '\0' || strcmp(end, "us") == 0) {
        mul = 1e3;
    }
    else if (strcmp(end, "ns") == 0) {
        mul = 1;
    }
    else if (strcmp(end, "ms") == 0) {
        mul = 1e6;
    }
    else if (strcmp(end, "s") == 0) {
        mul = 1e9;
    }
    else {
        return -1;
    }
    double ns = v * mul;
    if (ns > 9e18) {
        return -1;
    }
    return (int64_t)(ns + 0.5);
}

/* ---- lifecycle ----------------------------------------------------------- */

int
tl__track_init(tl_track *t, int kind, uint64_t uuid, const char *name)
{
    t->kind = kind;
    t->uuid = uuid;
    t->name = strdup(name);
    return t->name ? 0 : -1;
}

static void tl_fini(void *state);

/* At the first event (the session has started: the output directory
 * exists): open the file, start the writer, hook gc.callbacks. */
int
tl__start(tl_state *st, uint64_t now)
{
    char err[512];
    st->started = 1;
    int fd = -1;
    const ptk_host *h = st->host;
    if (st->ring != NULL) {
        /* no file while the program runs: the ring's dumps are reports */
    }
    else if (h->struct_size >= offsetof(ptk_host, report_create) + sizeof h->report_create) {
        /* the name claimed for this instance (another timeline in the same
         * directory gets timeline-2.json), the file made new, never through
         * a planted symlink */
        char path[4096];
        struct stat sb;
        if (h->report_claim(st->ctx, st->fmt->filename, path, sizeof path) == PTK_OK &&
            lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode) && sb.st_uid == geteuid()) {
            /* a FIFO of this user's there: a live reader of the trace */
            fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        else {
            fd = h->report_create(st->ctx, st->fmt->filename, path, sizeof path);
        }
        if (fd < 0) {
            return h->fail(st->ctx, PTK_EIO, "cannot create %s in the output directory: %s",
                           st->fmt->filename, h->strerror(fd));
        }
        char *copy = strdup(path);
        if (copy == NULL) {
            close(fd);
            return h->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        free(st->path);
        st->path = copy;
    }
    if (st->ring == NULL &&
        tl__out_open(&st->out, st->path, fd, st->buffer_size, err, sizeof(err)) != 0) {
        return st->host->fail(st->ctx, PTK_EIO, "%s", err);
    }
    st->t_origin = now; /* the first event's time: nothing is earlier */
    st->out.last_handoff_ns = now;
    st->last_counter = now;
    st->next_counter = now + TL_TICK_NS;
    st->next_tick = now + (st->flush_ns > 0 && (uint64_t)st->flush_ns < TL_TICK_NS
                               ? (uint64_t)st->flush_ns : TL_TICK_NS);
    if (st->fmt->start(st, now) != 0) {
        return st->host->fail(st->ctx, PTK_EINVAL, "buffer_kb is too small");
    }
    if (st->gc && tl__gc_install(st) != 0) {
        st->host->log(st->ctx, "gc.callbacks unavailable: no GC spans");
    }
    return st->ring != NULL ? tl__ring_start(st, now) : PTK_OK;
}

/* The options' values out of range: PTK_OK, or PTK_EOPTTYPE with the
 * message in args->errbuf. The duration in *min_ns. */
static int
tl_check_options(const ptk_init_args *args, int64_t *min_ns)
{
    const ptk_option_value *o = args->options;
    *min_ns = tl_parse_duration(o[OPT_MIN_DURATION].s ? o[OPT_MIN_DURATION].s : "0");
    if (*min_ns < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "min_duration: '%s' is not a duration (e.g. 50us, 1.5ms, 2s)",
                 o[OPT_MIN_DURATION].s);
        return PTK_EOPTTYPE;
    }
    if (tl_parse_duration(o[OPT_BLOCKING].s ? o[OPT_BLOCKING].s : "0") < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "blocking: '%s' is not a duration (e.g. 50us, 1.5ms, 2s)",
                 o[OPT_BLOCKING].s);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_BUFFER_KB].i < 4 || o[OPT_BUFFER_KB].i > 1024 * 1024) {
        snprintf(args->errbuf, args->errbuf_size,
                 "buffer_kb must be 4 to 1048576, not %lld",
                 (long long)o[OPT_BUFFER_KB].i);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_OBJECTS].i < 0 || o[OPT_OBJECTS].i > TL_OBJ_TRACKS) {
        snprintf(args->errbuf, args->errbuf_size,
                 "objects must be 0 to %d, not %lld", TL_OBJ_TRACKS,
                 (long long)o[OPT_OBJECTS].i);
        return PTK_EOPTTYPE;
    }
    if (!(o[OPT_RING].d >= 0) || o[OPT_RING].d > 1e6) {
        snprintf(args->errbuf, args->errbuf_size,
                 "ring must be 0 (off) or a number of seconds up to 1000000");
        return PTK_EOPTTYPE;
    }
    if (o[OPT_RING_MB].i < 1 || o[OPT_RING_MB].i > 1024 * 1024) {
        snprintf(args->errbuf, args->errbuf_size,
                 "ring_mb must be 1 to 1048576, not %lld",
                 (long long)o[OPT_RING_MB].i);
        return PTK_EOPTTYPE;
    }
    const char *trig = o[OPT_TRIGGER].s ? o[OPT_TRIGGER].s : "";
    if (trig[0] != '\0' && o[OPT_RING].d <= 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "trigger needs ring=SECONDS (the trigger writes the ring)");
        return PTK_EOPTTYPE;
    }
    if (trig[0] != '\0' && tl__ring_parse_trigger(trig, NULL, NULL) != 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "trigger: '%s' is not GLOB:MS (e.g. handle_*:50)", trig);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_FLUSH_MS].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "flush_ms must be 0 or more");
        return PTK_EOPTTYPE;
    }
    return PTK_OK;
}

/* The output file's absolute path, made when the session starts (the
 * directory is made, and the session's copy of its name replaced, then):
 * malloc'd, or NULL when out of memory. */
static char *
tl_output_path(const char *output_dir, const char *filename)
{
    char cwd[4096] = "";
    int rel = output_dir[0] != '/';
    if (rel && getcwd(cwd, sizeof(cwd)) == NULL) {
        cwd[0] = '\0';
    }
    size_t len = strlen(cwd) + strlen(output_dir) + strlen(filename) + 3;
    char *path = malloc(len);
    if (path != NULL) {
        snprintf(path, len, "%s%s%s/%s", rel ? cwd : "", rel ? "/" : "", output_dir, filename);
    }
    return path;
}

/* The process track, the counter tracks and the names made once. */
static int
tl_tracks_init(tl_state *st)
{
    char pname[64];
    snprintf(pname, sizeof(pname), "python %ld", st->pid);
    if (tl__track_init(&st->process_track, TL_TRACK_PROCESS, 1, pname) != 0 ||
        tl__track_init(&st->events_track, TL_TRACK_COUNTER, 2, "events/s") != 0 ||
        tl__track_init(&st->gc_track, TL_TRACK_COUNTER, 3, "GC pause (ms per s)") != 0 ||
        tl__track_init(&st->drop_track, TL_TRACK_COUNTER, 4, "dropped events (total)") != 0 ||
        tl__track_init(&st->block_track, TL_TRACK_COUNTER, 5,
                       "blocking Task steps (ms)") != 0 ||
        tl__name_label(&st->gc_name, "gc") != 0) {
        PyErr_Clear();
        return -1;
    }
    st->process_track.tid = st->pid;
    st->events_track.tid = st->gc_track.tid = st->drop_track.tid = st->pid;
    st->block_track.tid = st->pid;
    return 0;
}

static int
tl_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    if (args->noptions < OPT_COUNT) {
        snprintf(args->errbuf, args->errbuf_size,
                 "expected %d options, the host passed %zu", OPT_COUNT,
                 args->noptions);
        return PTK_EINVAL;
    }
    const ptk_option_value *o = args->options;
    int64_t min_ns;
    int rc = tl_check_options(args, &min_ns);
    if (rc != PTK_OK) {
        return rc;
    }
    tl_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    st->ctx_host = args->host->struct_size > offsetof(ptk_host, context);
    st->fmt = o[OPT_FORMAT].i == 1 ? &tl__json_format : &tl__pb_format;
    st->out_fmt = st->fmt;
    st->min_duration_ns = min_ns;
    st->blocking_ns = tl_parse_duration(o[OPT_BLOCKING].s ? o[OPT_BLOCKING].s : "0");
    st->flush_ns = o[OPT_FLUSH_MS].i * 1000000;
    st->builtins = o[OPT_BUILTINS].i != 0;
    st->exceptions = o[OPT_EXCEPTIONS].i != 0;
    st->tasks = o[OPT_TASKS].i != 0;
    st->gc = o[OPT_GC].i != 0;
    st->counters = o[OPT_COUNTERS].i != 0;
    st->objects = (int)o[OPT_OBJECTS].i;
    st->pid = (long)getpid();
    st->buffer_size = (size_t)o[OPT_BUFFER_KB].i * 1024;
    if (tl_tracks_init(st) != 0 ||
        (st->path = tl_output_path(args->output_dir, st->fmt->filename)) == NULL ||
        (o[OPT_RING].d > 0 &&
         tl__ring_new(st, o[OPT_RING].d, o[OPT_RING_MB].i, o[OPT_TRIGGER].s) != 0)) {
        tl_fini(st);
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    unsigned int m = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    if (st->builtins) {
        m |= PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
             PTK_MASK(PTK_EV_C_EXCEPTION);
    }
    if (st->exceptions) {
        m |= PTK_MASK(PTK_EV_EXCEPTION);
    }
    *events = m;
    *state = st;
    return PTK_OK;
}

/* Ends every running span (the file is then complete), closes the file and
 * writes timeline.summary.json. */
static int
tl_finish(tl_state *st)
{
    if (st->finished) {
        return 0;
    }
    if (!st->started && tl__start(st, st->host->clock_ns()) != PTK_OK) {
        return EIO;
    }
    if (!st->out.started) {
        return EIO;
    }
    if (getpid() != st->out.owner) {
        st->finished = 1; /* a forked child: the file is the parent's */
        return tl__out_close(&st->out);
    }
    uint64_t now = st->host->clock_ns();
    st->next_counter = now; /* a last sample of each counter */
    tl__tick(st, now);
    tl__gc_remove(st);
    tl__ctx_finish(st, now);
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th == NULL) {
            continue;
        }
        uint64_t t = th->last_ns > now ? th->last_ns : now;
        tl__close_all(st, th, t);
    }
    tl__rename_threads(st, now);
    /* At the end, wait for the disk rather than lose the tail. */
    for (int tries = 0; st->dropping && tries < 1000; tries++) {
        if (tl__resume(st, now) == 0) {
            break;
        }
        tl__out_kick(&st->out, now);
        usleep(1000);
    }
    if (st->fmt->finish(st) != 0) {
        tl__out_kick(&st->out, now);
        usleep(10000);
        st->fmt->finish(st);
    }
    st->finished = 1;
    return tl__out_close(&st->out);
}

PyObject *
tl__summary(tl_state *st, int werr)
{
    PyObject *tasks = PyList_New(0);
    if (tasks == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        tl_task *tk = st->task_list[i];
        PyObject *d = Py_BuildValue(
            "{s:K,s:s,s:s,s:K,s:K,s:K,s:K,s:O}", "id", (unsigned long long)tk->id,
            "kind", tk->greenlet ? "greenlet" : "task",
            "name", tk->track.name, "steps", (unsigned long long)tk->steps,
            "wall_ns", (unsigned long long)(tk->last_ns > tk->first_ns
                                                ? tk->last_ns - tk->first_ns : 0),
            "running_ns", (unsigned long long)tk->running_ns,
            "first_ns", (unsigned long long)(tk->first_ns - st->t_origin),
            "done", tk->done ? Py_True : Py_False);
        if (d == NULL || PyList_Append(tasks, d) != 0) {
            Py_XDECREF(d);
            Py_DECREF(tasks);
            return NULL;
        }
        Py_DECREF(d);
    }
    PyObject *blocking = PyList_New(0);
    for (size_t i = 0; blocking != NULL && i < st->nblocks; i++) {
        const tl_block *b = &st->blocks[i];
        PyObject *stack = PyList_New(b->nworst);
        for (int k = 0; stack != NULL && k < b->nworst; k++) {
            PyObject *t = PyUnicode_DecodeUTF8(b->worst[k]->text,
                                               (Py_ssize_t)strlen(b->worst[k]->text), "replace");
            if (t == NULL) {
                Py_CLEAR(stack);
                break;
            }
            PyList_SET_ITEM(stack, k, t);
        }
        PyObject *d = stack == NULL ? NULL : Py_BuildValue(
            "{s:s,s:K,s:K,s:K,s:N}", "task", b->task,
            "start_ns", (unsigned long long)(b->t0 - st->t_origin),
            "duration_ns", (unsigned long long)b->ns,
            "slowest_ns", (unsigned long long)b->worst_ns, "slowest_stack", stack);
        if (d == NULL || PyList_Append(blocking, d) != 0) {
            Py_CLEAR(blocking);
        }
        Py_XDECREF(d);
    }
    if (blocking == NULL) {
        Py_DECREF(tasks);
        return NULL;
    }
    uint64_t unmatched = 0;
    for (size_t i = 0; i < st->nthreads; i++) {
        if (st->threads[i] != NULL) {
            unmatched += st->threads[i]->unmatched;
        }
    }
    PyObject *res = Py_BuildValue(
        "{s:s,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:L,s:N,s:L,s:N,s:s,s:K}",
        "file", st->out_fmt->filename,
        "format", st->out_fmt == &tl__json_format ? "json" : "perfetto",
        "events", (unsigned long long)st->events,
        "spans", (unsigned long long)st->spans,
        "instants", (unsigned long long)st->instants,
        "dropped", (unsigned long long)st->dropped_total,
        "drop_episodes", (unsigned long long)st->drop_episodes,
        "bytes", (unsigned long long)st->out.written,
        "buffers_written", (unsigned long long)st->out.handoffs,
        "gc_collections", (unsigned long long)st->gc_count,
        "gc_total_ns", (unsigned long long)st->gc_total_ns,
        "unmatched_returns", (unsigned long long)unmatched,
        "names", (unsigned long long)st->nnames,
        "min_duration_ns", (long long)st->min_duration_ns,
        "tasks", tasks,
        "blocking_ns", (long long)st->blocking_ns,
        "blocking", blocking,
        "write_error", werr ? strerror(werr) : "",
        "after_report", (unsigned long long)st->after_finish);
    return res;
}

/* ring=: the ring's dump as the report; the session may go on. */
static int
tl_ring_report(tl_state *st, const ptk_report_args *args)
{
    PyObject *ring = NULL;
    int rc = tl__ring_report(st, args, &ring);
    PyObject *sum = tl__summary(st, 0);
    if (sum == NULL || ring == NULL || PyDict_SetItemString(sum, "ring", ring) != 0) {
        Py_XDECREF(sum);
        Py_XDECREF(ring);
        PyErr_Clear();
        return st->host->fail(st->ctx, PTK_ENOMEM, "cannot build the summary");
    }
    Py_DECREF(ring);
    int src = st->host->report_write_object(st->ctx, "timeline.summary.json", sum,
                                            PTK_FMT_JSON);
    Py_DECREF(sum);
    return rc != PTK_OK ? rc : src;
}

static int
tl_report(void *state, const ptk_report_args *args)
{
    tl_state *st = state;
    if (st->ring != NULL) {
        return tl_ring_report(st, args);
    }
    int werr = tl_finish(st);
    PyObject *sum = tl__summary(st, werr);
    if (sum == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "cannot build the summary");
    }
    int rc = st->host->report_write_object(st->ctx, "timeline.summary.json", sum,
                                           PTK_FMT_JSON);
    Py_DECREF(sum);
    fprintf(args->summary,
            "timeline: %s: %llu events, %llu bytes, %llu dropped, %zu tasks\n",
            st->path, (unsigned long long)st->events,
            (unsigned long long)st->out.written,
            (unsigned long long)st->dropped_total, st->ntasks);
    if (strcmp(st->fmt->filename, "timeline.json") == 0) {
        fprintf(args->summary,
                "timeline: Perfetto's format (format=perfetto, the default) "
                "holds the same in about a quarter of the bytes\n");
    }
    if (st->dropped_total > 0) {
        fprintf(args->summary,
                "timeline: %llu events dropped in %llu gaps (marked in the "
                "file): the writer could not keep up with the buffer, or "
                "out of memory\n", (unsigned long long)st->dropped_total,
                (unsigned long long)st->drop_episodes);
    }
    if (st->after_finish > 0) {
        fprintf(args->summary,
                "timeline: %llu events after the first report are not in %s: "
                "a timeline is written once, by the session's first report\n",
                (unsigned long long)st->after_finish, st->path);
    }
    if (werr != 0) {
        return st->host->fail(st->ctx, PTK_EIO, "writing %s: %s", st->path,
                              strerror(werr));
    }
    return rc;
}

static void
tl_track_free(tl_track *t)
{
    tl__ring_track_free(t);
    free(t->name);
    free(t->owed);
}

static void
tl_fini(void *state)
{
    tl_state *st = state;
    if (st == NULL) {
        return;
    }
    int py = Py_IsInitialized();
    PyGILState_STATE gil = PyGILState_UNLOCKED;
    if (py) {
        gil = PyGILState_Ensure();
        if (!st->finished && st->out.started) {
            tl_finish(st);
        }
        tl__gc_remove(st);
        tl__ring_free(st, 1);
    }
    tl__ring_free(st, 0); /* no Python: the hooks' boxes stay */
    tl__out_close(&st->out);
    tl__names_free(st);
    if (py) {
        PyGILState_Release(gil);
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th != NULL) {
            tl_track_free(&th->track);
            free(th->stack);
            free(th);
        }
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        tl_task *tk = st->task_list[i];
        tl_track_free(&tk->track);
        free(tk->label.text);
        free(tk->label.json);
        free(tk);
    }
    free(st->threads);
    free(st->task_list);
    ptk_kit_map_free(&st->task_map);
    tl_track_free(&st->process_track);
    tl_track_free(&st->events_track);
    tl_track_free(&st->gc_track);
    tl_track_free(&st->block_track);
    for (size_t i = 0; i < st->nblocks; i++) {
        free(st->blocks[i].task);
    }
    free(st->blocks);
    tl_track_free(&st->drop_track);
    for (size_t k = 0; k < st->nobj; k++) {
        tl_track_free(&st->obj_track[k]);
    }
    free(st->gc_name.text);
    free(st->gc_name.json);
    tl__ctx_free(st);
    free(st->path);
    free(st);
}

/* A thread ended: its open spans end at its last event, and its stack
 * (128 frames at first: ~5 KB) goes; the record stays, small (its track,
 * its name, its count of unmatched returns: what the report needs). A
 * thread that calls Python again grows a stack anew. */
static void
tl_thread_end(void *state, const ptk_thread *t)
{
    tl_state *st = state;
    tl_thread *th = t->index < st->nthreads ? st->threads[t->index] : NULL;
    if (th == NULL) {
        return;
    }
    tl__close_all(st, th, th->last_ns);
    free(th->stack);
    th->stack = NULL;
    th->cap = 0;
}

static const ptk_plugin_desc tl_desc = {
    PTK_PLUGIN_HEADER,
    .name = "timeline",
    .version = "0.1.0",
    .description = "every call as a span per thread and asyncio task, streamed "
                   "to Perfetto protobuf or Chrome JSON",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |
              PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
              PTK_MASK(PTK_EV_C_EXCEPTION) | PTK_MASK(PTK_EV_EXCEPTION),
    .flags = PTK_FLAG_CLOCK | PTK_FLAG_UNBOUND_C | PTK_FLAG_EXEC_CONTEXT,
    .options = tl_options,
    .init = tl_init,
    .on_event = tl__on_event,
    .on_ref = NULL,
    .report = tl_report,
    .fini = tl_fini,
    .on_thread_end = tl_thread_end,
};

PTK_PLUGIN_DEFINE(tl_desc)
