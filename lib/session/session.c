/* Sessions: plugin instances with an output directory and a thread scope,
 * attached to the hub while running. */
#include "session/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A ':'-list with relative entries made absolute against the current
 * directory now (the search itself never looks at the current directory). */
static char *
absolute_path_list(const char *list)
{
    if (list == NULL) {
        return NULL;
    }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) == NULL) {
        cwd[0] = '\0';
    }
    size_t cap = 1;
    for (const char *p = list; *p; p++) {
        cap += *p == ':' ? strlen(cwd) + 2 : 1;
    }
    cap += strlen(cwd) + 2;
    char *out = calloc(1, cap);
    if (out == NULL) {
        return NULL;
    }
    const char *p = list;
    while (1) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0) {
            if (out[0]) {
                strcat(out, ":");
            }
            if (p[0] != '/' && cwd[0]) {
                strcat(out, cwd);
                strcat(out, "/");
            }
            strncat(out, p, n);
        }
        if (e == NULL) {
            break;
        }
        p = e + 1;
    }
    return out;
}


/* The config as the current headers see it: one built against older
 * headers is smaller, so it is read through a zeroed copy of the current
 * size (what it lacks is NULL / default). */
static int
read_config(const ptk_session_config *cfg, ptk_session_config *full,
            char **errmsg)
{
    const size_t size_1_0 = offsetof(ptk_session_config, summary) + sizeof(FILE *);
    if (cfg->struct_size < size_1_0) {
        return ptk__err(errmsg, PTK_ESIZE,
                        "ptk_session_config.struct_size is %zu, expected at "
                        "least %zu",
                        cfg->struct_size, size_1_0);
    }
    memset(full, 0, sizeof *full);
    memcpy(full, cfg, cfg->struct_size < sizeof *full ? cfg->struct_size
                                                      : sizeof *full);
    if (full->threads != PTK_THREADS_CURRENT && full->threads != PTK_THREADS_ALL) {
        return ptk__err(errmsg, PTK_EINVAL, "invalid thread scope %d",
                        (int)full->threads);
    }
    if (ptk_backend_name(full->backend) == NULL) {
        return ptk__err(errmsg, PTK_EINVAL, "invalid backend %d",
                        (int)full->backend);
    }
    return PTK_OK;
}

/* The session's default filter, checked now, so that a bad one fails
 * here; each plugin instance builds its own from these values. Its
 * messages name no plugin (the subject is the session's filter). */
static int
session_filter(ptk_session *s, const char *text, char **errmsg)
{
    ptk__filter *probe = NULL;
    int rc = ptk__options_parse_ex(NULL, ptk__filter_specs, NULL, text,
                                   &s->filter_defaults, errmsg);
    if (rc == PTK_OK) {
        rc = ptk__filter_build(NULL, NULL, &s->filter_defaults, NULL, &probe,
                               errmsg);
        ptk__filter_free(probe);
    }
    return rc;
}

int
ptk_session_new(const ptk_session_config *cfg, ptk_session **out,
                char **errmsg)
{
    ptk_session_config def = PTK_SESSION_CONFIG_INIT, full;
    if (out == NULL) {
        return ptk__err(errmsg, PTK_EINVAL, "ptk_session_new: out is NULL");
    }
    *out = NULL;
    int rc = ptk__interp_check(errmsg);
    if (rc == PTK_OK) {
        rc = read_config(cfg != NULL ? cfg : &def, &full, errmsg);
    }
    if (rc < 0) {
        return rc;
    }
    cfg = &full;
    ptk_backend requested;
    int explicit;
    rc = ptk__backend_resolve(cfg->backend, &requested, &explicit, errmsg);
    if (rc < 0) {
        return rc;
    }
    ptk_session *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    s->output_dir = ptk__strdup(cfg->output_dir ? cfg->output_dir
                                                : "pytracekit-out");
    s->plugin_path = absolute_path_list(cfg->plugin_path);
    s->threads = cfg->threads;
    s->backend = cfg->backend;
    s->requested = requested;
    s->backend_explicit = explicit;
    s->summary = cfg->summary ? cfg->summary : stderr;
    s->gen = ptk__interp_gen;
    if (cfg->filter != NULL && *cfg->filter) {
        rc = session_filter(s, cfg->filter, errmsg);
        if (rc < 0) {
            ptk__options_free(&s->filter_defaults);
            free(s->output_dir);
            free(s->plugin_path);
            free(s);
            return rc;
        }
    }
    if (s->output_dir == NULL) {
        free(s);
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    *out = s;
    return PTK_OK;
}

static void
instance_free(struct ptk_plugin_ctx *c)
{
    ptk__options_free(&c->opts);
    ptk__filter_free(c->filter);
    free(c->filter_extra);
    free(c->identity_json);
    free(c->service_name);
    free(c->fail_msg);
    free(c->spec);
    free(c->name);
    free(c);
}

/* Can backend b deliver every kind c subscribes to? (The reference
 * events come from the reference tracer, whatever the backend.) */
static int
check_backend_events(struct ptk_plugin_ctx *c, ptk_backend b,
                     const char *where, char **errmsg)
{
    const ptk__backend_ops *ops = ptk__backend_ops_of(b);
    unsigned have = ops ? ops->events() | PTK_MASK_REF : ~0u;
    unsigned want = c->events_asked;
    /* Optional kinds the backend lacks are left out, not refused, and the
     * fallback kinds come in instead; the instance reads its subscription
     * to learn what it gets. */
    unsigned drop = want & ~have & c->sub.optional;
    if (drop) {
        want = (want & ~drop) | c->sub.fallback;
    }
    unsigned missing = want & ~have;
    if (missing == 0) {
        c->events = c->sub.events = want;
        return PTK_OK;
    }
    char names[256] = "";
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (missing & PTK_MASK(k)) {
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? ", " : "", ptk_event_name(k));
        }
    }
    return ptk__err(errmsg, PTK_EUNSUPPORTED,
                    "plugin %s subscribes to %s, which the %s backend does "
                    "not deliver%s",
                    where, names, ops->name,
                    (missing & PTK_MASK_BRANCHES)
                        ? " (branch and jump need the monitoring backend, "
                          "CPython 3.12+)"
                        : "");
}

int
ptk__instance_init(struct ptk_plugin_ctx *c, const char *output_dir,
                   const char *where, char *errbuf, size_t errbuf_size,
                   char **why)
{
    const ptk_plugin_desc *desc = c->desc;
    *why = NULL;
    /* the subscription the instance has before its init */
    c->sub = (ptk_subscription){.struct_size = sizeof c->sub,
                                .events = desc->events, .flags = desc->flags};
    c->events = c->events_asked = desc->events;
    c->flags = desc->flags;
    if (desc->init == NULL) {
        c->initialised = 1;
        return PTK_OK;
    }
    ptk_init_args args = {
        .struct_size = sizeof args,
        .host = &ptk__host,
        .ctx = c,
        .options = c->opts.values,
        .noptions = c->opts.nown,
        .output_dir = output_dir,
        .errbuf = errbuf,
        .errbuf_size = errbuf_size,
        .subscription = &c->sub,
    };
    /* not yet initialised: host calls meant for init (subscribe_filter)
     * are allowed */
    c->initialised = 0;
    errbuf[0] = '\0';
    int rc = desc->init(&args, &c->state, &c->sub.events);
    errbuf[errbuf_size - 1] = '\0'; /* a plugin may fill it all */
    if (rc < 0 || PyErr_Occurred()) {
        c->state = NULL; /* no fini for a state that init refused */
        return rc < 0 ? rc : PTK_EPYTHON;
    }
    c->initialised = 1;
    c->events = c->events_asked = c->sub.events;
    c->sub.optional &= c->sub.events;
    c->sub.fallback &= PTK_MASK_VALID & ~c->sub.events;
    /* Before ABI 1.2 a plugin could only change its flags by writing
     * its own descriptor: read them from there. */
    c->flags = desc->abi_minor >= 2 ? c->sub.flags : c->desc_orig->flags;
    rc = ptk__validate_desc(desc, where, c->events, why);
    if (rc < 0) {
        if (desc->fini) {
            desc->fini(c->state);
        }
        c->state = NULL;
        c->initialised = 0;
    }
    return rc;
}

/* A new instance of desc: the descriptor copied at its ABI's size, the
 * options read (messages name "plugin 'NAME'"). NULL with *rc set. */
static struct ptk_plugin_ctx *
new_instance(ptk_session *s, const ptk_plugin_desc *desc, const char *options,
             int *rc, char **errmsg)
{
    static uint64_t instances;
    struct ptk_plugin_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) {
        *rc = ptk__err(errmsg, PTK_ENOMEM, "out of memory");
        return NULL;
    }
    /* A descriptor from an older ABI minor is smaller: read it through a
     * zeroed copy of the current size, so members it lacks are NULL. */
    size_t dsize = desc->struct_size < sizeof c->desc_copy ? desc->struct_size
                                                           : sizeof c->desc_copy;
    memcpy(&c->desc_copy, desc, dsize);
    c->desc_orig = desc;
    c->desc = &c->desc_copy;
    c->session = s;
    c->slot = -1;
    c->id = ++instances;
    c->name = ptk__strdup(desc->name);
    char *subject = ptk__asprintf("plugin '%s'", desc->name);
    *rc = subject == NULL ? ptk__err(errmsg, PTK_ENOMEM, "out of memory")
                          : ptk__options_parse_ex(c->desc, ptk__filter_specs,
                                                  subject, options, &c->opts,
                                                  errmsg);
    free(subject);
    if (*rc < 0) {
        free(c->name);
        free(c);
        return NULL;
    }
    return c;
}

/* Runs the new instance's init; its failure is "plugin ... failed to
 * start", with the plugin's message and any Python traceback. */
static int
start_instance(struct ptk_plugin_ctx *c, const char *where, char **errmsg)
{
    char errbuf[1024], *why = NULL;
    int rc = ptk__instance_init(c, c->session->output_dir, where, errbuf,
                                sizeof errbuf, &why);
    if (rc < 0 && why != NULL) {
        rc = ptk__err(errmsg, rc, "%s", why);
    }
    else if (rc < 0) {
        char *tb = PyErr_Occurred() ? ptk__format_exception() : NULL;
        rc = ptk__err(errmsg, rc, "plugin %s failed to start: %s%s%s", where,
                      errbuf[0] ? errbuf
                                : (c->fail_msg ? c->fail_msg : ptk_strerror(rc)),
                      tb ? "\n" : "", tb ? tb : "");
        free(tb);
    }
    free(why);
    return rc;
}

static int
attach_instance(ptk_session *s, const ptk_plugin_desc *desc, void *dl,
                char *path, const char *options, char **errmsg)
{
    char where[512];
    snprintf(where, sizeof where, "'%s' (%s)",
             desc && desc->name ? desc->name : "?",
             path ? path : "linked in");
    int rc = ptk__validate_desc(desc, where, desc ? desc->events : 0, errmsg);
    if (rc < 0) {
        return rc;
    }
    struct ptk_plugin_ctx *c = new_instance(s, desc, options, &rc, errmsg);
    if (c == NULL) {
        return rc;
    }
    rc = start_instance(c, where, errmsg);
    if (rc < 0) {
        instance_free(c);
        return rc;
    }
    rc = check_backend_events(c, s->requested, where, errmsg);
    if (rc == PTK_OK) {
        char *subject = ptk__asprintf("plugin '%s'", c->desc->name);
        rc = subject == NULL
                 ? ptk__err(errmsg, PTK_ENOMEM, "out of memory")
                 : ptk__filter_build(subject, &c->opts, &s->filter_defaults,
                                     c->filter_extra, &c->filter, errmsg);
        free(subject);
    }
    if (rc < 0) {
        if (c->desc->fini) {
            c->desc->fini(c->state);
        }
        instance_free(c);
        return rc;
    }
    c->dl = dl;
    c->path = path;
    struct ptk_plugin_ctx **tail = &s->plugins;
    while (*tail) {
        tail = &(*tail)->next;
    }
    *tail = c;
    return s->running ? ptk__hub_rebuild(1, errmsg) : PTK_OK;
}

/* Reports run Python code (signal handlers, finalizers, GC callbacks run
 * inside them): nothing that changes the session may run meanwhile. */
static int
session_busy(const ptk_session *s, char **errmsg)
{
    if (s != NULL && s->in_report) {
        return ptk__err(errmsg, PTK_ESTATE,
                        "the session is writing its reports");
    }
    return PTK_OK;
}

int
ptk_session_add_static(ptk_session *s, const ptk_plugin_desc *desc,
                       const char *options, char **errmsg)
{
    if (s == NULL || desc == NULL) {
        return ptk__err(errmsg, PTK_EINVAL, "session and descriptor needed");
    }
    int rc = ptk__session_check(s, errmsg);
    if (rc == PTK_OK) {
        rc = session_busy(s, errmsg);
    }
    if (rc < 0) {
        return rc;
    }
    return attach_instance(s, desc, NULL, NULL, options, errmsg);
}

int
ptk_session_add_plugin(ptk_session *s, const char *spec, char **errmsg)
{
    if (s == NULL || spec == NULL || spec[0] == '\0') {
        return ptk__err(errmsg, PTK_EINVAL, "empty plugin specification");
    }
    int src = ptk__session_check(s, errmsg);
    if (src == PTK_OK) {
        src = session_busy(s, errmsg);
    }
    if (src < 0) {
        return src;
    }
    /* NAME[:OPTIONS] or PATH[:OPTIONS]. Text before the first ':' with no
     * '/' is a NAME and the options follow that ':'. Otherwise it is a
     * PATH, whose options start at the first ':' after the last '/' that
     * comes before the first '=' (option values may hold '/' and ':'). */
    const char *colon = strchr(spec, ':');
    size_t head = colon ? (size_t)(colon - spec) : strlen(spec);
    if (memchr(spec, '/', head) != NULL) {
        const char *eq = strchr(spec, '=');
        const char *slash = NULL;
        for (const char *q = spec; *q && (eq == NULL || q < eq); q++) {
            if (*q == '/') {
                slash = q;
            }
        }
        colon = strchr(slash ? slash : spec, ':');
    }
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    char *name = malloc(n + 1);
    if (name == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    memcpy(name, spec, n);
    name[n] = '\0';
    const ptk_plugin_desc *desc = NULL;
    void *dl = NULL;
    char *path = NULL;
    int rc = ptk__load(name, s->plugin_path, &desc, &dl, &path, errmsg);
    free(name);
    if (rc < 0) {
        return rc;
    }
    rc = attach_instance(s, desc, dl, path, colon ? colon + 1 : NULL, errmsg);
    if (rc < 0) {
        free(path);
        /* dl stays open: a failed init may have left callbacks registered */
    }
    else {
        struct ptk_plugin_ctx *c = s->plugins;
        while (c->next) {
            c = c->next;
        }
        c->spec = ptk__strdup(spec);
    }
    return rc;
}

int
ptk_session_remove_plugin(ptk_session *s, const char *name)
{
    if (s != NULL && (ptk__session_check(s, NULL) < 0 ||
                      session_busy(s, NULL) < 0)) {
        return PTK_ESTATE;
    }
    for (struct ptk_plugin_ctx *c = s ? s->plugins : NULL; c; c = c->next) {
        if (!c->removed && strcmp(c->name, name) == 0) {
            c->removed = 1;
            if (s->running) {
                ptk__hub_rebuild(0, NULL);
                ptk__hub_forget(c);
            }
            return PTK_OK;
        }
    }
    return PTK_ENOENT;
}

/* Makes path and its missing parents. On failure, removes the directories
 * it made (deepest first) and keeps errno. */
static int
mkdirs(const char *path)
{
    char *p = ptk__strdup(path);
    if (p == NULL) {
        return -1;
    }
    size_t made = 0, cap = 0;
    char **dirs = NULL; /* made by this call, in order */
    int rc = 0;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q != '\0') {
            continue;
        }
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0777) == 0) {
            if (made == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                char **n = realloc(dirs, ncap * sizeof *n);
                if (n == NULL) {
                    rmdir(p);
                    errno = ENOMEM;
                    rc = -1;
                    break;
                }
                dirs = n;
                cap = ncap;
            }
            if ((dirs[made] = ptk__strdup(p)) == NULL) {
                rmdir(p);
                errno = ENOMEM;
                rc = -1;
                break;
            }
            made++;
        }
        else if (errno != EEXIST) {
            rc = -1;
            break;
        }
        *q = c;
        if (c == '\0') {
            break;
        }
    }
    int e = errno;
    while (made > 0) {
        made--;
        if (rc < 0) {
            rmdir(dirs[made]);
        }
        free(dirs[made]);
    }
    free(dirs);
    free(p);
    errno = e;
    return rc;
}

/* access() lets root pass where no file can be made (/proc, /sys, a
 * read-only mount): make one, and remove it. */
static int
probe_writable(const char *dir)
{
    char *tmp = ptk__asprintf("%s/.pytracekit-probe.XXXXXX", dir);
    if (tmp == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

int
ptk_session_start(ptk_session *s, char **errmsg)
{
    int crc = ptk__session_check(s, errmsg);
    if (crc == PTK_OK) {
        crc = session_busy(s, errmsg);
    }
    if (crc < 0) {
        return crc;
    }
    if (s->running) {
        return ptk__err(errmsg, PTK_ESTATE, "the session is already running");
    }
    if (mkdirs(s->output_dir) != 0) {
        return ptk__err(errmsg, PTK_EIO, "cannot create output directory %s: %s",
                        s->output_dir, strerror(errno));
    }
    struct stat st;
    if (stat(s->output_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return ptk__err(errmsg, PTK_EIO,
                        "output directory %s exists and is not a directory",
                        s->output_dir);
    }
    char *abs = realpath(s->output_dir, NULL);
    if (abs == NULL || access(abs, W_OK | X_OK) != 0 || probe_writable(abs) != 0) {
        int e = errno;
        free(abs);
        return ptk__err(errmsg, PTK_EIO, "output directory %s is not writable: %s",
                        s->output_dir, strerror(e));
    }
    free(s->output_dir);
    s->output_dir = abs;
    int rc = ptk__process_session_start(s, errmsg);
    if (rc < 0) {
        return rc;
    }
    ptk__thread *me = ptk__thread_get();
    if (me == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    ptk_backend use;
    rc = ptk__backend_choose(s->requested, s->backend_explicit, s->summary,
                             &use, errmsg);
    if (rc < 0) {
        return rc;
    }
    /* A fallback backend (sys.monitoring's tool ids taken) may lack
     * kinds the plugins asked for: say so instead of delivering nothing. */
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        char where[512];
        snprintf(where, sizeof where, "'%s'", c->name ? c->name : "?");
        rc = check_backend_events(c, use, where, errmsg);
        if (rc < 0) {
            if (ptk__active_sessions == NULL) {
                ptk__backend_ops_of(use)->release();
                ptk__hub_backend = PTK_BACKEND_AUTO;
                ptk__hub_ops = NULL;
            }
            return rc;
        }
    }
    s->backend = use;
    s->owner = &me->pub;
    s->running = 1;
    s->t_start = ptk__clock_ns();
    ptk__process_unreported_add(s);
    s->next_active = ptk__active_sessions;
    ptk__active_sessions = s;
    rc = ptk__hub_rebuild(1, errmsg);
    if (rc < 0) {
        ptk_session_stop(s);
        return rc;
    }
    return PTK_OK;
}

int
ptk_session_stop(ptk_session *s)
{
    if (s == NULL || !s->running || ptk__session_check(s, NULL) < 0) {
        return PTK_ESTATE;
    }
    ptk__backends_before_stop(s);
    s->running = 0;
    s->t_stop = ptk__clock_ns();
    ptk__hub_rebuild(0, NULL);
    for (struct ptk_session **pp = &ptk__active_sessions; *pp;
         pp = &(*pp)->next_active) {
        if (*pp == s) {
            *pp = s->next_active;
            break;
        }
    }
    s->next_active = NULL;
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        ptk__hub_forget(c);
    }
    ptk__process_session_stop(s); /* following ends with the session */
    return PTK_OK;
}

ptk_backend
ptk_session_backend(const ptk_session *s)
{
    return s ? s->backend : PTK_BACKEND_AUTO;
}

int
ptk_session_running(const ptk_session *s)
{
    return s != NULL && s->running;
}

int
ptk_session_failures(const ptk_session *s)
{
    int n = 0;
    for (struct ptk_plugin_ctx *c = s ? s->plugins : NULL; c; c = c->next) {
        n += c->failed;
    }
    return n + (s ? s->children_failed : 0);
}

int
ptk_session_report(ptk_session *s, char **errmsg)
{
    int crc = ptk__session_check(s, errmsg);
    if (crc < 0) {
        return crc;
    }
    if (s->running) {
        return ptk__err(errmsg, PTK_ESTATE, "stop the session before reporting");
    }
    crc = session_busy(s, errmsg);
    if (crc < 0) {
        return crc;
    }
    int first = PTK_OK;
    if (!ptk__process_owns(s)) {
        return PTK_OK; /* a forked child's copy, or already written */
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    s->in_report = 1;
    ptk__process_report_begin(s);
    ptk__thread_names_refresh();
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        if (!c->initialised || c->failed || c->removed || !c->desc->report) {
            continue;
        }
        ptk_report_args args = {
            .struct_size = sizeof args,
            .host = &ptk__host,
            .ctx = c,
            .output_dir = s->output_dir,
            .summary = s->summary,
            .elapsed_s = (double)(s->t_stop - s->t_start) / 1e9,
        };
        int rc = c->desc->report(c->state, &args);
        if (rc < 0 || PyErr_Occurred()) {
            ptk__plugin_fail(c, rc < 0 ? rc : PTK_EPYTHON, 1);
            PyErr_Clear();
        }
    }
    if (s->notes != NULL) {
        fputs(s->notes, s->summary);
    }
    ptk__process_report_end(s);
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        if (!c->failed) {
            continue;
        }
        fprintf(s->summary,
                "pytracekit: plugin '%s' failed (%s: %s) and was detached%s%s\n",
                c->name, ptk_err_name(c->fail_code), ptk_strerror(c->fail_code),
                c->fail_msg ? ":\n" : "", c->fail_msg ? c->fail_msg : "");
        if (first == PTK_OK) {
            first = c->fail_code;
            ptk__err(errmsg, first, "plugin '%s' failed: %s", c->name,
                     c->fail_msg ? c->fail_msg : ptk_strerror(c->fail_code));
        }
    }
    if (ptk__process_children_failed(s) > 0 && first == PTK_OK) {
        first = PTK_EPLUGIN;
        ptk__err(errmsg, first, "a plugin failed in %d followed processes",
                 s->children_failed);
    }
    fflush(s->summary);
    PyErr_Restore(et, ev, tb);
    s->in_report = 0;
    if (s->free_pending) {
        ptk_session_free(s); /* asked for during the report */
    }
    return first;
}

void
ptk_session_free(ptk_session *s)
{
    if (s == NULL) {
        return;
    }
    if (s->in_report) {
        s->free_pending = 1; /* done when the report returns */
        return;
    }
    /* After Py_FinalizeEx the plugins' state may hold objects of the
     * interpreter that is gone: their fini cannot run, that memory stays. */
    int alive = ptk__session_check(s, NULL) == PTK_OK;
    if (alive && s->running) {
        ptk_session_stop(s);
    }
    /* Every instance is finalised before any is freed: a fini may look up
     * another instance's service (the timeline reads reftrack's counts).
     * Last attached first, so a consumer attached after its publisher can
     * still use it; a publisher's service goes with its fini. */
    size_t n = 0;
    for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
        n++;
    }
    for (size_t k = n; k > 0; k--) {
        struct ptk_plugin_ctx *c = s->plugins;
        for (size_t i = 1; i < k; i++) {
            c = c->next;
        }
        if (alive && c->initialised && c->desc->fini) {
            c->desc->fini(c->state);
        }
        c->initialised = 0;
        c->service = NULL;
        free(c->service_name);
        c->service_name = NULL;
    }
    struct ptk_plugin_ctx *c = s->plugins;
    s->plugins = NULL;
    while (c != NULL) {
        struct ptk_plugin_ctx *next = c->next;
        ptk__report_release(c->id);
        free(c->path);
        /* shared objects stay loaded: CPython may still hold pointers into
         * them (types, functions) made by the plugin */
        instance_free(c);
        c = next;
    }
    ptk__process_session_free(s);
    ptk__options_free(&s->filter_defaults);
    free(s->output_dir);
    free(s->plugin_path);
    free(s->notes);
    free(s->attached_at);
    free(s);
}
