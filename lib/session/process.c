/* Sessions across processes: a forked child's copy of a session is
 * silenced or started afresh (following children), followed Python
 * children get the session through the environment, os._exit/os.exec* and
 * SIGTERM/SIGHUP write the reports first, and each report directory gets
 * the run's identity (run.json). See include/pytracekit/process.h. */
#include "session/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int hooks_installed; /* inherited by forked children */
static int fork_registered; /* os.register_at_fork done (it cannot be undone) */
static int reporting;       /* sessions writing reports now */
static int pending_signal;  /* SIGTERM/SIGHUP came meanwhile */
static void die_by(int signum);
static void retry_stop(void);
static PyObject *orig_exit, *orig_execv, *orig_execve;
static uint64_t orig_gen; /* ptk__interp_gen when they were taken */

static double
wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int
ptk_session_follow_children(ptk_session *s, int follow)
{
    if (s == NULL) {
        return PTK_EINVAL;
    }
    if (s->running) {
        return PTK_ESTATE;
    }
    s->follow = follow != 0;
    return PTK_OK;
}

int
ptk_session_mark_attached(ptk_session *s, const char *at, long by_pid)
{
    if (s == NULL || at == NULL || by_pid <= 0) {
        return PTK_EINVAL;
    }
    char *copy = ptk__strdup(at);
    if (copy == NULL) {
        return PTK_ENOMEM;
    }
    free(s->attached_at);
    s->attached_at = copy;
    s->attached_by = by_pid;
    return PTK_OK;
}

int
ptk__process_owns(const ptk_session *s)
{
    /* pid 0: never started here or elsewhere (its plugins report empty) */
    return s != NULL && (s->pid == 0 || s->pid == (long)getpid()) &&
           !s->flushed;
}

/* ---- stale temporary files ------------------------------------------- */

/* A report is written to a temporary file first (host.c's report_open),
 * named ".pytracekit-tmp.BOOT.PIDNS.PID.START.NAME.XXXXXX": the boot id
 * (32 hex digits), the inode of the pid namespace, the writer's pid and its
 * start time (clock ticks since boot, /proc/PID/stat). A later session
 * removes such a file only when the writer provably is gone: same boot and
 * same pid namespace as its own, and no process with that pid and that
 * start time. Nothing else in the directory is ever removed. */
#define TEMP_PREFIX ".pytracekit-tmp."

typedef struct temp_id {
    char boot[33];
    unsigned long long ns;
    unsigned long long start;
} temp_id;

/* The start time of process pid, or 0 if it cannot be read. */
static unsigned long long
start_time_of(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the name (field 2) may hold anything: fields 3.. follow the last ')' */
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        return 0;
    }
    p++;
    for (int field = 3; field < 22 && *p; field++) {
        while (*p == ' ') {
            p++;
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    return strtoull(p, NULL, 10);
}

/* This process's identity; 0 if some part is not known (no /proc): then
 * its temporaries carry "0" there and are never removed by anyone. */
static int
own_temp_id(temp_id *id)
{
    memset(id, 0, sizeof *id);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    char raw[64] = "";
    if (f != NULL) {
        if (fgets(raw, sizeof raw, f) == NULL) {
            raw[0] = '\0';
        }
        fclose(f);
    }
    size_t k = 0;
    for (const char *p = raw; *p && k < 32; p++) {
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) {
            id->boot[k++] = *p;
        }
    }
    id->boot[k] = '\0';
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0) {
        id->ns = (unsigned long long)st.st_ino;
    }
    id->start = start_time_of((long)getpid());
    if (k != 32 || id->ns == 0 || id->start == 0) {
        strcpy(id->boot, "0");
        return 0;
    }
    return 1;
}

char *
ptk__process_temp_name(const char *dir, const char *name)
{
    static temp_id id;
    static long id_pid; /* a forked child computes its own */
    if (id_pid != (long)getpid()) {
        own_temp_id(&id);
        id_pid = (long)getpid();
    }
    /* the final name is there for people only: cut to keep under NAME_MAX */
    return ptk__asprintf("%s/" TEMP_PREFIX "%s.%llu.%ld.%llu.%.120s.XXXXXX",
                         dir, id.boot, id.ns, id_pid, id.start, name);
}

static int
parse_u(const char **p, unsigned long long *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9') {
        return 0;
    }
    errno = 0;
    char *end;
    *out = strtoull(s, &end, 10);
    if (errno != 0 || *end != '.') {
        return 0;
    }
    *p = end + 1;
    return 1;
}

/* Was `name` written by a process of this boot and pid namespace that is
 * gone? */
static int
temp_is_stale(const char *name, const temp_id *own)
{
    if (strncmp(name, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) != 0) {
        return 0;
    }
    const char *p = name + sizeof TEMP_PREFIX - 1;
    if (strncmp(p, own->boot, 32) != 0 || p[32] != '.') {
        return 0;
    }
    p += 33;
    unsigned long long ns, pid, start;
    if (!parse_u(&p, &ns) || !parse_u(&p, &pid) || !parse_u(&p, &start) ||
        ns != own->ns || pid == 0 || pid > (unsigned long long)LONG_MAX ||
        start == 0 || (long)pid == (long)getpid()) {
        return 0;
    }
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
        /* a process has that pid: the writer unless it started later */
        unsigned long long now = start_time_of((long)pid);
        return now != 0 && now != start;
    }
    return 1;
}

static void
clean_stale_temporaries(const char *dir)
{
    temp_id own;
    if (!own_temp_id(&own)) {
        return; /* nothing can be proven gone */
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (temp_is_stale(e->d_name, &own) &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

/* ---- reports written early: os._exit, os.exec*, signals --------------- */

/* Sessions started and not reported since, running or stopped: a signal
 * or os._exit between a session's stop and its report (an atexit hook that
 * stops, then reports) still writes it. */
static ptk_session *unreported;

void
ptk__process_unreported_add(ptk_session *s)
{
    if (!s->unreported) {
        s->unreported = 1;
        s->next_unreported = unreported;
        unreported = s;
    }
}

static void
unreported_remove(ptk_session *s)
{
    if (!s->unreported) {
        return;
    }
    for (ptk_session **pp = &unreported; *pp; pp = &(*pp)->next_unreported) {
        if (*pp == s) {
            *pp = s->next_unreported;
            break;
        }
    }
    s->next_unreported = NULL;
    s->unreported = 0;
}

/* Stops and reports every session of this process not reported yet. */
static void
report_running(void)
{
    ptk_session *todo[64];
    int n = 0;
    for (ptk_session *s = unreported; s && n < 64; s = s->next_unreported) {
        if (ptk__process_owns(s)) {
            todo[n++] = s;
        }
    }
    for (int i = 0; i < n; i++) {
        char *err = NULL;
        if (todo[i]->running) {
            ptk_session_stop(todo[i]);
        }
        ptk_session_report(todo[i], &err);
        ptk_free(err);
        todo[i]->flushed = 1;
    }
    fflush(NULL);
}

/* Set while os._exit/os.exec* report: the exec'd program is this run's
 * continuation and is followed with the same environment. */
static int keep_follow_env;
static int in_fork_child; /* in the after-fork hook */

static PyObject *
call_original(PyObject *orig, PyObject *args, PyObject *kw)
{
    keep_follow_env = 1;
    report_running();
    keep_follow_env = 0;
    return PyObject_Call(orig, args, kw);
}

static PyObject *
wrap_exit(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return call_original(orig_exit, args, kw);
}

static PyObject *
wrap_execv(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return call_original(orig_execv, args, kw);
}

static PyObject *
wrap_execve(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return call_original(orig_execve, args, kw);
}

/* SIGTERM and SIGHUP reach Python's handler (on_signal) through this C
 * handler. Python runs it at its next check for signals; a signal that
 * comes just before a blocking call (multiprocessing's semaphores, which a
 * terminated Pool worker waits on) would leave it waiting for ever, so until
 * the handler has run, the signal is sent again every 50 ms by a POSIX timer
 * (timer_settime is async-signal-safe; a timer belongs to the process that
 * made it, so a forked child makes its own). */
static timer_t retry_timer[2];
static long retry_pid;
static volatile sig_atomic_t retry_pending;

static void
term_handler(int signum)
{
    int saved = errno;
    PyErr_SetInterruptEx(signum);
    if (retry_pid == (long)getpid()) {
        struct itimerspec its;
        memset(&its, 0, sizeof its);
        its.it_value.tv_nsec = 50 * 1000 * 1000;
        retry_pending = 1;
        timer_settime(retry_timer[signum == SIGHUP], 0, &its, NULL);
    }
    errno = saved;
}

static void
retry_stop(void)
{
    if (retry_pid == (long)getpid() && retry_pending) {
        struct itimerspec off;
        memset(&off, 0, sizeof off);
        timer_settime(retry_timer[0], 0, &off, NULL);
        timer_settime(retry_timer[1], 0, &off, NULL);
        retry_pending = 0;
    }
}

static void
retry_setup(void)
{
    int sigs[2] = {SIGTERM, SIGHUP};
    for (int i = 0; i < 2; i++) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = sigs[i];
        if (timer_create(CLOCK_MONOTONIC, &ev, &retry_timer[i]) != 0) {
            return;
        }
    }
    retry_pid = (long)getpid();
    retry_pending = 0;
}

static PyObject *
on_signal(PyObject *self, PyObject *args)
{
    (void)self;
    int signum = 0;
    PyObject *frame;
    if (!PyArg_ParseTuple(args, "iO", &signum, &frame)) {
        return NULL;
    }
    retry_stop();
    if (reporting > 0) {
        if (pending_signal != 0) {
            /* a second one: a report may be stuck (a FIFO, a hung disk);
             * end now with what is written */
            static const char msg[] = "pytracekit: signalled again while "
                                      "writing reports; ending now\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            die_by(signum);
        }
        /* Reports are being written (at exit, say): end once they are. */
        pending_signal = signum;
        Py_RETURN_NONE;
    }
    report_running();
    die_by(signum);
    Py_RETURN_NONE; /* the signal was ignored after all */
}

/* Ends the process as the signal's default action would. */
static void
die_by(int signum)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(signum, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signum);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(signum);
}

/* ---- fork ------------------------------------------------------------ */

/* OUT/pid-N, or OUT/pid-N.2, … if that exists (an exec'd image keeps the
 * pid of the process that reported there). */
static char *
child_dir(const char *root)
{
    for (int k = 1; k < 1000; k++) {
        char *p = k == 1 ? ptk__asprintf("%s/pid-%ld", root, (long)getpid())
                         : ptk__asprintf("%s/pid-%ld.%d", root,
                                         (long)getpid(), k);
        if (p == NULL || mkdir(p, 0777) == 0) {
            return p;
        }
        int e = errno;
        free(p);
        if (e != EEXIST) {
            break;
        }
    }
    return NULL;
}

/* A followed child's human summaries go to DIR/summary.txt, not to the
 * stderr it shares with its parent (or that its parent reads). */
static void
summary_to_file(ptk_session *s, const char *dir)
{
    int fd = ptk__create_new(dir, "summary.txt");
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    if (s->summary_file != NULL) {
        fclose(s->summary_file);
    }
    s->summary_file = f;
    s->summary = f;
}

/* Runs the plugin's fini and init again: the state the parent had is gone.
 * init runs as at first (ptk__instance_init, as for a new instance), with
 * no conditions added. The filter built from the parent's conditions stays
 * in use (code objects keep its verdicts), so the child must ask for the
 * same. */
static void
restart_instance(struct ptk_plugin_ctx *c, const char *output_dir)
{
    if (!c->initialised || c->failed || c->removed || c->desc->init == NULL) {
        return;
    }
    if (c->desc->fini) {
        c->desc->fini(c->state);
    }
    c->state = NULL;
    /* its service went with the state; init publishes it again */
    c->service = NULL;
    free(c->service_name);
    c->service_name = NULL;
    char where[512], errbuf[1024], *why = NULL;
    snprintf(where, sizeof where, "'%s' (%s)", c->name ? c->name : "?",
             c->path ? c->path : "linked in");
    char *kept = c->filter_extra;
    c->filter_extra = NULL;
    int rc = ptk__instance_init(c, output_dir, where, errbuf, sizeof errbuf, &why);
    int same = (kept == NULL && c->filter_extra == NULL) || (kept != NULL && c->filter_extra != NULL && strcmp(kept, c->filter_extra) == 0);
    free(c->filter_extra);
    c->filter_extra = kept;
    if (rc >= 0 && !same) {
        snprintf(errbuf, sizeof errbuf, "in the child it asked for another "
                                        "file filter than in its parent");
        rc = PTK_ESTATE;
        if (c->desc->fini) {
            c->desc->fini(c->state);
        }
        c->state = NULL;
        c->initialised = 0; /* no fini for a state that init refused */
    }
    if (rc < 0) {
        if (why != NULL || errbuf[0]) {
            free(c->fail_msg);
            c->fail_msg = why != NULL ? why : ptk__strdup(errbuf);
            why = NULL;
        }
        ptk__plugin_fail(c, rc, PyErr_Occurred() != NULL);
        PyErr_Clear();
    }
    free(why);
}

static void
follow_into_child(ptk_session *s)
{
    ptk_session_stop(s);
    char *dir = child_dir(s->follow_root);
    if (dir == NULL) {
        fprintf(s->summary, "pytracekit: cannot create a report directory "
                            "for process %ld under %s: %s\n",
                (long)getpid(),
                s->follow_root, strerror(errno));
        return;
    }
    free(s->output_dir);
    s->output_dir = dir;
    summary_to_file(s, dir);
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        restart_instance(c, dir);
    }
    char *err = NULL;
    if (ptk_session_start(s, &err) < 0) {
        fprintf(s->summary, "pytracekit: cannot follow process %ld: %s\n",
                (long)getpid(), err ? err : "?");
    }
    ptk_free(err);
}

static PyObject *
after_fork_child(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    in_fork_child = 1;
    keep_follow_env = 1; /* the child continues the parent's run */
    ptk_session *todo[64];
    int n = 0;
    ptk__clock_after_fork();
    for (ptk_session *s = ptk__active_sessions; s && n < 64;
         s = s->next_active) {
        todo[n++] = s;
    }
    if (hooks_installed) {
        retry_setup(); /* timers are not inherited */
    }
    /* Restarting runs Python code (a plugin's init may import), where a
     * SIGTERM (Pool.terminate() on a worker just forked) would be handled
     * before the child's session runs, and end it with nothing written:
     * hold it, as during a report, and act on it once the session runs. */
    reporting++;
    for (int i = 0; i < n; i++) {
        if (todo[i]->follow && !todo[i]->flushed) {
            follow_into_child(todo[i]);
        }
        else {
            ptk_session_stop(todo[i]); /* reports nothing: not its process */
        }
        /* the environment is the parent's session's to put back */
        Py_CLEAR(todo[i]->follow_restore);
    }
    in_fork_child = 0;
    keep_follow_env = 0;
    PyErr_Clear();
    if (--reporting == 0 && pending_signal != 0) {
        int signum = pending_signal;
        pending_signal = 0;
        report_running();
        die_by(signum);
    }
    Py_RETURN_NONE;
}

static PyMethodDef hook_defs[] = {
    {"_exit", (PyCFunction)(void (*)(void))wrap_exit,
     METH_VARARGS | METH_KEYWORDS,
     "os._exit, after pytracekit wrote the running sessions' reports"},
    {"execv", (PyCFunction)(void (*)(void))wrap_execv,
     METH_VARARGS | METH_KEYWORDS,
     "os.execv, after pytracekit wrote the running sessions' reports"},
    {"execve", (PyCFunction)(void (*)(void))wrap_execve,
     METH_VARARGS | METH_KEYWORDS,
     "os.execve, after pytracekit wrote the running sessions' reports"},
    {"_pytracekit_after_fork", after_fork_child, METH_NOARGS,
     "pytracekit: a forked child's sessions"},
    {"_pytracekit_on_signal", on_signal, METH_VARARGS,
     "pytracekit: write the reports, then end by the signal"},
};

/* os.NAME = wrapper, keeping the original. */
static void
wrap_os(PyObject *os, const char *name, PyMethodDef *def, PyObject **orig)
{
    PyObject *o = PyObject_GetAttrString(os, name);
    PyObject *w = o ? PyCFunction_New(def, NULL) : NULL;
    if (w != NULL && PyObject_SetAttrString(os, name, w) == 0) {
        Py_XSETREF(*orig, o); /* again after uninstall_hooks: the same one */
        o = NULL;
    }
    Py_XDECREF(o);
    Py_XDECREF(w);
    PyErr_Clear();
}

static void
install_hooks(void)
{
    if (hooks_installed) {
        return;
    }
    hooks_installed = 1;
    PyObject *os = PyImport_ImportModuleLevel("os", NULL, NULL, NULL, 0);
    if (os == NULL) {
        PyErr_Clear();
        return;
    }
    if (orig_gen != ptk__interp_gen) {
        /* taken in an interpreter finalized since (embedding: Py_Initialize
         * again): its objects are gone, not ours to release */
        orig_exit = orig_execv = orig_execve = NULL;
        orig_gen = ptk__interp_gen;
    }
    wrap_os(os, "_exit", &hook_defs[0], &orig_exit);
    wrap_os(os, "execv", &hook_defs[1], &orig_execv);
    wrap_os(os, "execve", &hook_defs[2], &orig_execve);
    PyObject *fn = fork_registered ? NULL : PyCFunction_New(&hook_defs[3], NULL);
    PyObject *reg = fn ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    PyObject *kw = fn ? Py_BuildValue("{s:O}", "after_in_child", fn) : NULL;
    PyObject *empty = PyTuple_New(0);
    PyObject *r = reg && kw && empty ? PyObject_Call(reg, empty, kw) : NULL;
    fork_registered |= r != NULL;
    Py_XDECREF(r);
    Py_XDECREF(empty);
    Py_XDECREF(kw);
    Py_XDECREF(reg);
    Py_XDECREF(fn);
    Py_DECREF(os);
    PyErr_Clear();
    /* SIGTERM and SIGHUP where they still do what they do by default (and
     * only the main thread may set a handler). Through _signal, which the
     * interpreter has loaded at start: the signal module would import enum
     * before the program does. */
    PyObject *sig = PyImport_ImportModuleLevel("_signal", NULL, NULL, NULL, 0);
    PyObject *dfl = sig ? PyObject_GetAttrString(sig, "SIG_DFL") : NULL;
    PyObject *handler = dfl ? PyCFunction_New(&hook_defs[4], NULL) : NULL;
    const char *names[] = {"SIGTERM", "SIGHUP"};
    for (int i = 0; handler && i < 2; i++) {
        PyObject *num = PyObject_GetAttrString(sig, names[i]);
        PyObject *cur = num ? PyObject_CallMethod(sig, "getsignal", "O", num)
                            : NULL;
        if (cur != NULL && PyObject_RichCompareBool(cur, dfl, Py_EQ) == 1) {
            PyObject *r2 = PyObject_CallMethod(sig, "signal", "OO", num,
                                               handler);
            if (r2 != NULL) {
                struct sigaction sa;
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = term_handler;
                sigemptyset(&sa.sa_mask);
                sa.sa_flags = SA_ONSTACK;
                sigaction(i == 0 ? SIGTERM : SIGHUP, &sa, NULL);
            }
            Py_XDECREF(r2);
        }
        Py_XDECREF(cur);
        Py_XDECREF(num);
        PyErr_Clear();
    }
    Py_XDECREF(handler);
    Py_XDECREF(dfl);
    Py_XDECREF(sig);
    PyErr_Clear();
    retry_setup();
}

/* Is @p f the hook function @p def (a PyCFunction made from it)? */
static int
is_hook(PyObject *f, PyMethodDef *def)
{
    return f != NULL && PyCFunction_Check(f) &&
           ((PyCFunctionObject *)f)->m_ml == def;
}

/* When no session is left that could report (none running, none stopped
 * and not reported), the process-wide hooks install_hooks() made go again,
 * where they are still ours: SIGTERM/SIGHUP back to their default action,
 * the retry timers deleted, os._exit/execv/execve the originals (a wrapper
 * the program kept still works: it calls the original). A process a
 * session was attached to and detached from (docs/attach.md) so runs as it
 * did. The at-fork callback stays (CPython cannot unregister it): with no
 * session it does nothing.
 *
 * Done in the main thread at its next safe point (Py_AddPendingCall), not
 * where the last session is freed: signal handlers are the main thread's to
 * set, and signal.signal() runs the Python handlers of signals pending
 * (a Ctrl-C held while the reports were written, which the command acts on
 * after them): there, a handler's exception reaches the program as it
 * would have anyway. */
static int uninstall_pending;       /* an uninstall_now is queued ... */
static uint64_t uninstall_gen;      /* ... in this interpreter */

static int
uninstall_now(void *unused)
{
    (void)unused;
    uninstall_pending = 0;
    if (!hooks_installed || reporting > 0 || ptk__active_sessions != NULL ||
        unreported != NULL || uninstall_gen != ptk__interp_gen) {
        return 0;
    }
    /* a signal handler's exception, for the program */
    PyObject *rt = NULL, *rv = NULL, *rtb = NULL;
    PyObject *sig = PyImport_ImportModuleLevel("_signal", NULL, NULL, NULL, 0);
    PyObject *dfl = sig ? PyObject_GetAttrString(sig, "SIG_DFL") : NULL;
    const char *names[] = {"SIGTERM", "SIGHUP"};
    int ok = dfl != NULL;
    for (int i = 0; ok && i < 2; i++) {
        PyObject *num = PyObject_GetAttrString(sig, names[i]);
        PyObject *cur = num ? PyObject_CallMethod(sig, "getsignal", "O", num)
                            : NULL;
        ok = cur != NULL;
        if (ok && is_hook(cur, &hook_defs[4])) {
            PyObject *r = PyObject_CallMethod(sig, "signal", "OO", num, dfl);
            if (r == NULL && rt == NULL) {
                PyErr_Fetch(&rt, &rv, &rtb);
                /* the handler is set before pending signals are handled */
                PyObject *now = PyObject_CallMethod(sig, "getsignal", "O", num);
                ok = now != NULL && !is_hook(now, &hook_defs[4]);
                Py_XDECREF(now);
            }
            Py_XDECREF(r);
        }
        Py_XDECREF(cur);
        Py_XDECREF(num);
        PyErr_Clear();
    }
    Py_XDECREF(dfl);
    Py_XDECREF(sig);
    PyErr_Clear();
    if (ok) {
        if (retry_pid == (long)getpid()) {
            retry_stop();
            timer_delete(retry_timer[0]);
            timer_delete(retry_timer[1]);
        }
        retry_pid = 0;
        PyObject *os = PyImport_ImportModuleLevel("os", NULL, NULL, NULL, 0);
        static const char *const fns[] = {"_exit", "execv", "execve"};
        PyObject *origs[] = {orig_exit, orig_execv, orig_execve};
        for (int i = 0; os != NULL && i < 3; i++) {
            PyObject *cur = PyObject_GetAttrString(os, fns[i]);
            if (origs[i] != NULL && is_hook(cur, &hook_defs[i])) {
                PyObject_SetAttrString(os, fns[i], origs[i]);
            }
            Py_XDECREF(cur);
        }
        Py_XDECREF(os);
        PyErr_Clear();
        hooks_installed = 0;
    }
    if (rt != NULL) {
        PyErr_Restore(rt, rv, rtb);
        return -1;
    }
    return 0;
}

static void
uninstall_hooks(void)
{
    if (!hooks_installed || uninstall_pending || ptk__active_sessions != NULL ||
        unreported != NULL || !Py_IsInitialized()) {
        return;
    }
    if (Py_AddPendingCall(uninstall_now, NULL) == 0) {
        uninstall_pending = 1;
        uninstall_gen = ptk__interp_gen;
    }
}

/* ---- following children: the environment ------------------------------ */

#ifndef PTK_PYTHONDIR_FROM_LIBDIR
#define PTK_PYTHONDIR_FROM_LIBDIR "python" Py_STRINGIFY(PY_MAJOR_VERSION) "." Py_STRINGIFY(PY_MINOR_VERSION) "/site-packages"
#endif

/* The directory holding the pytracekit package that has the start-up
 * hook: the imported package's, the build tree's, the installed one. */
static char *
package_parent(void)
{
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *m = mods ? PyDict_GetItemString(mods, "pytracekit") : NULL;
    PyObject *f = m ? PyObject_GetAttrString(m, "__file__") : NULL;
    const char *file = f && PyUnicode_Check(f) ? PyUnicode_AsUTF8(f) : NULL;
    char *cands[4] = {NULL, NULL, NULL, NULL};
    if (file != NULL) {
        char *d = ptk__strdup(file);
        char *slash = d ? strrchr(d, '/') : NULL;
        if (slash) {
            *slash = '\0';
            slash = strrchr(d, '/');
            if (slash) {
                *slash = '\0';
            }
        }
        cands[0] = d;
    }
    Py_XDECREF(f);
    PyErr_Clear();
    char *lib = ptk__library_dir();
    if (lib != NULL) {
        cands[1] = ptk__asprintf("%s/../python", lib);
        cands[2] = ptk__asprintf("%s/" PTK_PYTHONDIR_FROM_LIBDIR, lib);
        cands[3] = ptk__asprintf("%s/../lib/" PTK_PYTHONDIR_FROM_LIBDIR, lib);
    }
    free(lib);
    char *found = NULL;
    for (int i = 0; i < 4; i++) {
        char *hook = cands[i] ? ptk__asprintf("%s/pytracekit/_follow/"
                                              "sitecustomize.py",
                                              cands[i])
                              : NULL;
        if (found == NULL && hook != NULL && access(hook, R_OK) == 0) {
            found = realpath(cands[i], NULL);
        }
        free(hook);
        free(cands[i]);
    }
    return found;
}

/* PYTRACEKIT_FOLLOW carries the run that set it ("run": pid and start
 * time of the following session). It is taken only when it is this
 * process's own hook's (a followed child: _pytracekit._follow_run) or a
 * following session's of this process that is still running; anything
 * else is left over from a finished session (an environment copied to a
 * later process): said, and replaced. The session that sets it keeps what
 * was there before and puts it back when it stops. */
static const char follow_env_src[] =
    "import json, os, sys\n"
    "live = a.pop('_live')\n"
    "raw = os.environ.get('PYTRACEKIT_FOLLOW')\n"
    "root = None\n"
    "restore = None\n"
    "if raw:\n"
    "    try:\n"
    "        spec = json.loads(raw)\n"
    "        root, run = spec['output_dir'], spec.get('run')\n"
    "    except (ValueError, KeyError, TypeError):\n"
    "        root = run = None\n"
    "    _c = sys.modules.get('pytracekit._pytracekit')\n"
    "    if root is not None and run is not None and (\n"
    "            run == getattr(_c, '_follow_run', None) or run in live):\n"
    "        pass\n"
    "    else:\n"
    "        sys.stderr.write('pytracekit: PYTRACEKIT_FOLLOW is not this run\\'s'\n"
    "                         ' (left over from a finished session): ignored\\n')\n"
    "        root = None\n"
    "if root is None and a['pkgdir']:\n"
    "    root = a['output_dir']\n"
    "    hook = os.path.join(a['pkgdir'], 'pytracekit', '_follow')\n"
    "    old = os.environ.get('PYTHONPATH')\n"
    "    if old and old.split(os.pathsep)[0] == hook:\n"
    "        old = os.pathsep.join(old.split(os.pathsep)[1:]) or None\n"
    "    restore = {'PYTRACEKIT_FOLLOW': raw, 'PYTHONPATH': old,\n"
    "               'hook': hook, 'follow': json.dumps(a)}\n"
    "    os.environ['PYTRACEKIT_FOLLOW'] = restore['follow']\n"
    "    os.environ['PYTHONPATH'] = hook + (os.pathsep + old if old else '')\n";

/* At stop: the environment as it was before follow_env_src set it, unless
 * the program changed it since (then only the hook's entry goes). */
static const char follow_restore_src[] =
    "import os\n"
    "r = a\n"
    "if os.environ.get('PYTRACEKIT_FOLLOW') == r['follow']:\n"
    "    if r['PYTRACEKIT_FOLLOW'] is None:\n"
    "        os.environ.pop('PYTRACEKIT_FOLLOW', None)\n"
    "    else:\n"
    "        os.environ['PYTRACEKIT_FOLLOW'] = r['PYTRACEKIT_FOLLOW']\n"
    "pp = os.environ.get('PYTHONPATH')\n"
    "if pp is not None:\n"
    "    parts = [x for x in pp.split(os.pathsep) if x != r['hook']]\n"
    "    if len(parts) != len(pp.split(os.pathsep)):\n"
    "        if parts:\n"
    "            os.environ['PYTHONPATH'] = os.pathsep.join(parts)\n"
    "        else:\n"
    "            os.environ.pop('PYTHONPATH', None)\n";

/* "PID:START": the run identity of a following session. */
static PyObject *
follow_run_id(const ptk_session *s)
{
    (void)s;
    return PyUnicode_FromFormat("%ld:%lld", (long)getpid(),
                                (long long)(wall_now() * 1e6));
}

/* The run ids of this process's running following sessions. */
static PyObject *
follow_live_runs(void)
{
    PyObject *live = PyList_New(0);
    for (ptk_session *o = ptk__active_sessions; live && o; o = o->next_active) {
        if (o->follow && o->follow_run != NULL &&
            PyList_Append(live, o->follow_run) < 0) {
            Py_CLEAR(live);
        }
    }
    return live;
}

void
ptk__process_session_stop(ptk_session *s)
{
    if (s->follow_restore == NULL || keep_follow_env) {
        return;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_XDECREF(ptk__run_snippet(follow_restore_src, "a", s->follow_restore));
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    Py_CLEAR(s->follow_restore);
}

/* Children report under the directory the first followed session chose;
 * that session exports the plugins and options for Python children. */
static int
follow_setup(ptk_session *s, char **errmsg)
{
    char *pkg = package_parent();
    PyObject *plugins = PyList_New(0);
    for (struct ptk_plugin_ctx *c = s->plugins; plugins && c; c = c->next) {
        if (c->removed || c->spec == NULL) {
            continue;
        }
        PyObject *str = PyUnicode_FromString(c->spec);
        if (str == NULL || PyList_Append(plugins, str) < 0) {
            Py_CLEAR(plugins);
        }
        Py_XDECREF(str);
    }
    Py_CLEAR(s->follow_run);
    s->follow_run = follow_run_id(s);
    PyObject *live = follow_live_runs();
    /* the filter as Session keywords, not as text to parse again */
    PyObject *filter = ptk__filter_keywords(&s->filter_defaults);
    PyObject *a = plugins && s->follow_run && live && filter ? Py_BuildValue(
                                                                   "{s:O,s:s,s:s,s:s,s:z,s:z,s:O,s:O}", "plugins", plugins,
                                                                   "output_dir", s->output_dir,
                                                                   "threads", s->threads == PTK_THREADS_ALL ? "all" : "current",
                                                                   "backend", ptk_backend_name(s->requested), "plugin_path",
                                                                   s->plugin_path, "pkgdir", pkg, "filter", filter,
                                                                   "run", s->follow_run)
                                                             : NULL;
    Py_XDECREF(plugins);
    Py_XDECREF(filter);
    free(pkg);
    PyObject *ns = NULL;
    if (a != NULL && PyDict_SetItemString(a, "_live", live) == 0) {
        ns = ptk__run_snippet(follow_env_src, "a", a);
    }
    Py_XDECREF(a);
    Py_XDECREF(live);
    PyObject *restore = ns ? PyDict_GetItemString(ns, "restore") : NULL;
    Py_CLEAR(s->follow_restore);
    if (restore != NULL && restore != Py_None) {
        s->follow_restore = Py_NewRef(restore);
    }
    PyObject *root = ns ? PyDict_GetItemString(ns, "root") : NULL;
    const char *r = root && PyUnicode_Check(root) ? PyUnicode_AsUTF8(root)
                                                  : NULL;
    int rc = PTK_OK;
    if (r == NULL) {
        rc = ptk__err(errmsg, PTK_ENOENT,
                      "following children needs the pytracekit Python "
                      "package (pytracekit/_follow/sitecustomize.py), "
                      "found neither an imported one nor one next to the "
                      "library");
    }
    else {
        free(s->follow_root);
        s->follow_root = ptk__strdup(r);
        if (strcmp(r, s->output_dir) != 0 && s->summary_file == NULL) {
            summary_to_file(s, s->output_dir); /* started by the hook */
        }
    }
    Py_XDECREF(ns);
    PyErr_Clear();
    return rc;
}

int
ptk__process_session_start(ptk_session *s, char **errmsg)
{
    clean_stale_temporaries(s->output_dir);
    /* A followed forked child writes its reports' JSON in C (json.c), with
     * no import after the fork (another thread of the parent may have
     * held an import lock at the fork, for ever in the child). */
    install_hooks();
    /* A forked child's copy keeps the parent's root and environment: no
     * Python code (imports) runs in the after-fork hook, where another
     * thread's import lock may be held for ever. */
    if (s->follow && !(in_fork_child && s->follow_root != NULL)) {
        int rc = follow_setup(s, errmsg);
        if (rc < 0) {
            return rc;
        }
    }
    s->pid = (long)getpid();
    s->ppid = (long)getppid();
    s->flushed = 0;
    s->started_wall = wall_now();
    return PTK_OK;
}

/* ---- the run's identity ---------------------------------------------- */

PyObject *
ptk__process_identity(const ptk_session *s)
{
    PyObject *argv = PySys_GetObject("orig_argv"); /* borrowed */
    if (argv == NULL) {
        argv = PySys_GetObject("argv");
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return Py_BuildValue("{s:l,s:l,s:d,s:O,s:s}", "pid", s->pid, "ppid",
                         s->ppid, "started", s->started_wall, "argv",
                         argv ? argv : Py_None, "host", host);
}

void
ptk__process_note_written(struct ptk_plugin_ctx *ctx, const char *name)
{
    ptk_session *s = ctx ? ctx->session : NULL;
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->nwritten; i++) {
        if (strcmp(s->written[i], name) == 0) {
            return;
        }
    }
    char **w = realloc(s->written, (s->nwritten + 1) * sizeof *w);
    if (w != NULL) {
        s->written = w;
        w[s->nwritten] = ptk__strdup(name);
        if (w[s->nwritten] != NULL) {
            s->nwritten++;
            return;
        }
    }
    s->written_lost = 1; /* said when run.json is written */
}

static void
free_written(ptk_session *s)
{
    for (size_t i = 0; i < s->nwritten; i++) {
        free(s->written[i]);
    }
    free(s->written);
    s->written = NULL;
    s->nwritten = 0;
    s->written_lost = 0;
}

/* Whether @p list (of str) holds @p name. */
static int
listed(PyObject *list, const char *name)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        const char *u = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
        if (u != NULL && strcmp(u, name) == 0) {
            return 1;
        }
    }
    PyErr_Clear();
    return 0;
}

/* Appends to @p files what this run wrote into the output directory
 * without the host's report functions (a trace a plugin streams itself,
 * coverage.py's .coverage, an html/ directory, as "html/"): the entries
 * changed since the session started that are not listed yet, not run.json,
 * not a report's temporary file and not a followed child's pid-N/. */
static int
add_unlisted(ptk_session *s, PyObject *files)
{
    DIR *d = opendir(s->output_dir);
    if (d == NULL) {
        return 0;
    }
    PyObject *found = PyList_New(0);
    struct dirent *e;
    while (found != NULL && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        struct stat sb;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
            strcmp(n, "run.json") == 0 ||
            strncmp(n, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) == 0 ||
            (strncmp(n, "pid-", 4) == 0 && n[4] >= '0' && n[4] <= '9') ||
            fstatat(dirfd(d), n, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        /* the kernel's file clock may lag the wall clock by a tick */
        double mtime = (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec * 1e-9;
        if (mtime < s->started_wall - 0.05 || listed(files, n)) {
            continue;
        }
        PyObject *u = S_ISDIR(sb.st_mode) ? PyUnicode_FromFormat("%s/", n)
                                          : PyUnicode_FromString(n);
        if (u == NULL || PyList_Append(found, u) < 0) {
            Py_CLEAR(found);
        }
        Py_XDECREF(u);
    }
    closedir(d);
    int rc = found != NULL && PyList_Sort(found) == 0 &&
                     PyList_SetSlice(files, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, found) == 0
                 ? 0
                 : -1;
    Py_XDECREF(found);
    return rc;
}

/* run.json, last: the files of this run, with the run's identity. */
static void
write_manifest(ptk_session *s)
{
    if (s->written_lost) {
        fprintf(s->summary, "pytracekit: out of memory: %s/run.json does not "
                            "list every report file written\n",
                s->output_dir);
    }
    PyObject *id = ptk__process_identity(s);
    PyObject *files = PyList_New(0);
    PyObject *plugins = PyList_New(0);
    for (size_t i = 0; files && i < s->nwritten; i++) {
        PyObject *n = PyUnicode_FromString(s->written[i]);
        if (n == NULL || PyList_Append(files, n) < 0) {
            Py_CLEAR(files);
        }
        Py_XDECREF(n);
    }
    if (files != NULL && add_unlisted(s, files) < 0) {
        Py_CLEAR(files);
    }
    int failed = 0;
    for (struct ptk_plugin_ctx *c = s->plugins; plugins && c; c = c->next) {
        failed += c->failed;
        PyObject *p = c->removed ? NULL : Py_BuildValue("{s:s,s:z,s:O}", "name", c->name, "spec", c->spec, "failed", c->failed ? Py_True : Py_False);
        if (!c->removed && (p == NULL || PyList_Append(plugins, p) < 0)) {
            Py_CLEAR(plugins);
        }
        Py_XDECREF(p);
    }
    /* the lines the summary printed after the reports (s->notes): what the
     * program did to the hub's hooks */
    PyObject *notes = PyUnicode_DecodeUTF8(s->notes ? s->notes : "",
                                           s->notes ? (Py_ssize_t)strlen(s->notes) : 0,
                                           "replace");
    PyObject *lines = notes ? PyUnicode_Splitlines(notes, 0) : NULL;
    Py_XDECREF(notes);
    PyObject *m = id && files && plugins && lines ? Py_BuildValue(
                                                        "{s:s,s:i,s:O,s:d,s:s,s:s,s:s,s:O,s:O,s:i,s:O}", "format", "pytracekit-run",
                                                        "version", 1, "run", id, "ended", s->ended_wall, "python",
                                                        ptk__python_version(), "backend", ptk_backend_name(s->backend),
                                                        "clock", ptk__clock_source(), "plugins", plugins, "files", files,
                                                        "failed_plugins", failed, "notes", lines)
                                                  : NULL;
    if (m != NULL && s->attached_at != NULL) {
        PyObject *a = Py_BuildValue("{s:s,s:l}", "at", s->attached_at, "by_pid",
                                    s->attached_by);
        if (a == NULL || PyDict_SetItemString(m, "attached", a) < 0) {
            Py_CLEAR(m);
        }
        Py_XDECREF(a);
    }
    Py_XDECREF(lines);
    Py_XDECREF(id);
    Py_XDECREF(files);
    Py_XDECREF(plugins);
    struct ptk_plugin_ctx fake = {.session = s, .name = (char *)"run"};
    if (m == NULL || ptk__host.report_write_object(&fake, "run.json", m,
                                                   PTK_FMT_JSON) < 0) {
        fprintf(s->summary, "pytracekit: cannot write %s/run.json%s%s\n",
                s->output_dir, fake.fail_msg ? ": " : "",
                fake.fail_msg ? fake.fail_msg : "");
    }
    free(fake.fail_msg);
    Py_XDECREF(m);
    PyErr_Clear();
}

/* ---- followed processes whose plugins failed -------------------------- */

static const char children_failed_src[] =
    "import json, os\n"
    "out = []\n"
    "try:\n"
    "    names = sorted(os.listdir(a['root']))\n"
    "except OSError:\n"
    "    names = []\n"
    "for n in names:\n"
    "    d = os.path.join(a['root'], n)\n"
    "    if not n.startswith('pid-') or not os.path.isdir(d):\n"
    "        continue\n"
    "    try:\n"
    "        with open(os.path.join(d, 'run.json'), encoding='utf-8') as f:\n"
    "            m = json.load(f)\n"
    "        run = m['run']\n"
    "        if run['started'] < a['started'] or not m.get('failed_plugins'):\n"
    "            continue\n"
    "        names = [p['name'] for p in m.get('plugins', ()) if p.get('failed')]\n"
    "    except (OSError, ValueError, KeyError, TypeError):\n"
    "        continue\n"
    "    out.append('pytracekit: process %s: plugin %s failed, its figures are '\n"
    "               'missing (%s)\\n' % (run.get('pid', '?'),\n"
    "               ', '.join(\"'%s'\" % x for x in names) or '?',\n"
    "               os.path.join(d, 'summary.txt')))\n";

int
ptk__process_children_failed(ptk_session *s)
{
    s->children_failed = 0;
    if (!s->follow || s->follow_root == NULL || s->output_dir == NULL || strcmp(s->follow_root, s->output_dir) != 0) {
        return 0; /* not the top process: it does not see the others */
    }
    PyObject *a = Py_BuildValue("{s:s,s:d}", "root", s->follow_root, "started",
                                s->started_wall);
    PyObject *ns = a ? ptk__run_snippet(children_failed_src, "a", a) : NULL;
    Py_XDECREF(a);
    PyObject *out = ns ? PyDict_GetItemString(ns, "out") : NULL;
    if (out == NULL || !PyList_Check(out)) {
        fprintf(s->summary, "pytracekit: cannot check the followed processes' "
                            "reports under %s\n",
                s->follow_root);
    }
    else {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) {
            const char *line = PyUnicode_AsUTF8(PyList_GET_ITEM(out, i));
            if (line != NULL) {
                fputs(line, s->summary);
            }
        }
        s->children_failed = (int)PyList_GET_SIZE(out);
    }
    Py_XDECREF(ns);
    PyErr_Clear();
    return s->children_failed;
}

/* ---- SIGINT while reports are written -------------------------------- */

static volatile sig_atomic_t sigint_held;
static struct sigaction sigint_saved;
static int sigint_holding;

static void
hold_sigint(int signum)
{
    (void)signum;
    static const char msg[] = "pytracekit: interrupted while writing "
                              "reports; finishing them first\n";
    sigint_held = 1;
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

/* The program's other signal handlers (SIGALRM from pytest-timeout, say)
 * would run inside the reports, which run Python code, and an exception
 * they raise would be blamed on a plugin: held meanwhile, delivered after.
 * Not the synchronous signals (a crash), SIGKILL/SIGSTOP, SIGINT (above),
 * nor SIGTERM/SIGHUP (written, then the process ends: below). */
#ifndef NSIG
#define NSIG 65
#endif
static volatile sig_atomic_t other_held[NSIG];
static struct sigaction other_saved[NSIG];
static unsigned char other_holding[NSIG];

static void
hold_other(int signum)
{
    if (signum > 0 && signum < NSIG) {
        other_held[signum] = 1;
    }
}

static int
holdable(int sig)
{
    switch (sig) {
    case SIGINT:
    case SIGTERM:
    case SIGHUP:
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGABRT:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGCONT:
        return 0;
    default:
        return 1;
    }
}

static void
hold_others(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction cur;
        if (!holdable(sig) || sigaction(sig, NULL, &cur) != 0 ||
            (cur.sa_flags & SA_SIGINFO) || cur.sa_handler == SIG_DFL ||
            cur.sa_handler == SIG_IGN || cur.sa_handler == hold_other) {
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = hold_other;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        other_held[sig] = 0;
        if (sigaction(sig, &sa, &other_saved[sig]) == 0) {
            other_holding[sig] = 1;
        }
    }
}

static void
release_others(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        if (!other_holding[sig]) {
            continue;
        }
        other_holding[sig] = 0;
        sigaction(sig, &other_saved[sig], NULL);
        if (other_held[sig]) {
            other_held[sig] = 0;
            raise(sig); /* delivered now, as if it came now */
        }
    }
}

void
ptk__process_report_begin(ptk_session *s)
{
    free_written(s);
    unreported_remove(s);
    s->ended_wall = wall_now();
    reporting++;
    if (sigint_holding++ == 0 && PyOS_getsig(SIGINT) != SIG_IGN) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = hold_sigint;
        sigemptyset(&sa.sa_mask);
        sigint_held = 0;
        sigaction(SIGINT, &sa, &sigint_saved);
    }
    if (reporting == 1) {
        hold_others();
    }
}

void
ptk__process_report_end(ptk_session *s)
{
    write_manifest(s);
    if (--sigint_holding == 0 && PyOS_getsig(SIGINT) == hold_sigint) {
        sigaction(SIGINT, &sigint_saved, NULL);
        if (sigint_held) {
            sigint_held = 0;
            PyErr_SetInterrupt(); /* delivered now, as if it came now */
        }
    }
    if (reporting == 1) {
        release_others();
    }
    if (--reporting == 0 && pending_signal != 0) {
        fflush(NULL);
        die_by(pending_signal);
    }
}

void
ptk__process_session_free(ptk_session *s)
{
    unreported_remove(s);
    free_written(s);
    free(s->follow_root);
    if (ptk__session_check(s, NULL) == PTK_OK) {
        ptk__process_session_stop(s);
        Py_CLEAR(s->follow_run);
    }
    if (s->summary_file != NULL) {
        fclose(s->summary_file);
    }
    uninstall_hooks();
}
