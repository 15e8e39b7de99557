/*
 * calldepth: a pytracekit plugin that counts Python calls by call depth.
 *
 *   pytracekit -p ./calldepth.so:root=main program.py
 *
 * With `root=NAME`, only calls made inside a function named NAME are
 * counted, and depths are relative to it (NAME itself is depth 1); without
 * it, depths are the hub's absolute ones. Every CALL event counts, so each
 * resumption of a generator counts as a call, as in sys.setprofile.
 *
 * It writes `calldepth.txt` into the session's output directory:
 *
 *   # calldepth: Python calls by depth below main()
 *   depth calls
 *   1 1
 *   2 4
 *   ...
 *   total 21
 *   max 7
 *   deepest main > rec > rec > ...
 *
 * and a one-line summary (plus a bar chart) on stderr.
 *
 * Built against the installed headers alone:
 *   cc $(pkg-config --cflags pytracekit) -shared -fPIC -o calldepth.so calldepth.c
 */
#define PY_SSIZE_T_CLEAN
#include <pytracekit/plugin.h>

#include <stdlib.h>
#include <string.h>

/* Calls deeper than the `max` option share the last bucket. */
#define CD_DEFAULT_MAX "100"

typedef struct cd_thread {
    int32_t root_depth; /* hub depth of the root frame; 0 = not inside it */
} cd_thread;

typedef struct cd_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    char *root;            /* function name, or NULL */
    int64_t max;           /* buckets 1..max; max collects the deeper ones */
    uint64_t *hist;        /* hist[1..max] */
    uint64_t total;
    int32_t deepest;       /* largest relative depth seen */
    char *deepest_chain;   /* "a > b > c" at the first time it was reached */
    cd_thread *threads;    /* indexed by ptk_thread::index */
    size_t nthreads;
} cd_state;

static const ptk_option_spec cd_options[] = {
    {"root", PTK_OPT_STRING, NULL,
     "count only calls inside functions of this name, depth relative to it", NULL},
    {"max", PTK_OPT_INT, CD_DEFAULT_MAX,
     "deepest bucket: deeper calls are counted in it", NULL},
    {NULL, 0, NULL, NULL, NULL}};

static char *
cd_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

static int
cd_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    (void)events;
    const ptk_option_value *root = args->host->option(args, "root");
    const ptk_option_value *max = args->host->option(args, "max");
    if (max->i < 1 || max->i > 100000) {
        snprintf(args->errbuf, args->errbuf_size,
                 "max must be between 1 and 100000, got %lld", (long long)max->i);
        return PTK_EINVAL;
    }
    cd_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    st->max = max->i;
    st->hist = calloc((size_t)st->max + 1, sizeof(*st->hist));
    if (root->is_set && root->s[0] != '\0') {
        st->root = cd_strdup(root->s);
    }
    if (st->hist == NULL || (root->is_set && root->s[0] != '\0' && st->root == NULL)) {
        free(st->hist);
        free(st->root);
        free(st);
        return PTK_ENOMEM;
    }
    *state = st;
    return PTK_OK;
}

static cd_thread *
cd_thread_of(cd_state *st, const ptk_thread *th)
{
    if (th->index >= st->nthreads) {
        size_t n = (size_t)th->index + 8;
        cd_thread *t = realloc(st->threads, n * sizeof(*t));
        if (t == NULL) {
            return NULL;
        }
        memset(t + st->nthreads, 0, (n - st->nthreads) * sizeof(*t));
        st->threads = t;
        st->nthreads = n;
    }
    return &st->threads[th->index];
}

static int
cd_is_root(const cd_state *st, PyCodeObject *code)
{
    const char *name = PyUnicode_AsUTF8(code->co_name);
    if (name == NULL) {
        PyErr_Clear();
        return 0;
    }
    return strcmp(name, st->root) == 0;
}

/* "a > b > c": the qualified names of stack[from..to). */
static char *
cd_chain(const ptk_thread *th, int32_t from, int32_t to)
{
    size_t len = 1, cap = 256;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return NULL;
    }
    buf[0] = '\0';
    for (int32_t i = from; i < to; i++) {
        const char *name = PyUnicode_AsUTF8(th->stack[i].code->co_qualname);
        if (name == NULL) {
            PyErr_Clear();
            name = "?";
        }
        size_t need = strlen(name) + (i > from ? 3 : 0);
        if (len + need > cap) {
            while (len + need > cap) {
                cap *= 2;
            }
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        if (i > from) {
            strcat(buf, " > ");
        }
        strcat(buf, name);
        len += need;
    }
    return buf;
}

static int
cd_on_event(void *state, const ptk_event *ev)
{
    cd_state *st = state;
    cd_thread *t = cd_thread_of(st, ev->thread);
    if (t == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory for thread %u",
                              (unsigned)ev->thread->index);
    }
    if (ev->kind == PTK_EV_RETURN) {
        /* ev->depth is the depth before RETURN, i.e. that of the frame
         * leaving (-1 for a frame that started before tracing did):
         * leaving the root frame ends the counted region. */
        if (t->root_depth > 0 && ev->depth > 0 && ev->depth <= t->root_depth) {
            t->root_depth = 0;
        }
        return PTK_OK;
    }

    int32_t rel = ev->depth;
    if (st->root != NULL) {
        if (t->root_depth == 0) {
            if (!cd_is_root(st, ev->code)) {
                return PTK_OK;
            }
            t->root_depth = ev->depth;
        }
        rel = ev->depth - t->root_depth + 1;
    }
    if (rel < 1) {
        return PTK_OK;
    }
    st->hist[rel > st->max ? st->max : rel]++;
    st->total++;
    if (rel > st->deepest) {
        st->deepest = rel;
        /* The shadow stack (PTK_FLAG_STACK) holds the frames of this
         * thread; the counted ones start at the root frame. */
        int32_t from = ev->depth - rel;
        char *chain = cd_chain(ev->thread, from < 0 ? 0 : from, ev->depth);
        if (chain == NULL) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory for a call chain");
        }
        free(st->deepest_chain);
        st->deepest_chain = chain;
    }
    return PTK_OK;
}

static int
cd_report(void *state, const ptk_report_args *args)
{
    cd_state *st = state;
    void *token;
    FILE *f = args->host->report_open(args->ctx, "calldepth.txt", &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    if (st->root != NULL) {
        fprintf(f, "# calldepth: Python calls by depth below %s()\n", st->root);
    } else {
        fprintf(f, "# calldepth: Python calls by depth\n");
    }
    fprintf(f, "depth calls\n");
    uint64_t peak = 0;
    for (int64_t d = 1; d <= st->max; d++) {
        if (st->hist[d] != 0) {
            fprintf(f, "%lld%s %llu\n", (long long)d, d == st->max ? "+" : "",
                    (unsigned long long)st->hist[d]);
        }
        if (st->hist[d] > peak) {
            peak = st->hist[d];
        }
    }
    fprintf(f, "total %llu\n", (unsigned long long)st->total);
    fprintf(f, "max %d\n", (int)st->deepest);
    fprintf(f, "deepest %s\n", st->deepest_chain ? st->deepest_chain : "-");
    int bad = ferror(f);
    if (args->host->report_commit(token, !bad) != PTK_OK || bad) {
        return args->host->fail(args->ctx, PTK_EIO, "cannot write calldepth.txt");
    }

    fprintf(args->summary, "calldepth: %llu calls, max depth %d%s%s%s (%s/calldepth.txt)\n",
            (unsigned long long)st->total, (int)st->deepest,
            st->root ? " below " : "", st->root ? st->root : "",
            st->root ? "()" : "", args->output_dir);
    for (int64_t d = 1; d <= st->max && peak > 0; d++) {
        if (st->hist[d] == 0) {
            continue;
        }
        int width = (int)((st->hist[d] * 40 + peak - 1) / peak);
        fprintf(args->summary, "  %4lld%s %8llu %.*s\n", (long long)d,
                d == st->max ? "+" : " ", (unsigned long long)st->hist[d], width,
                "########################################");
    }
    return PTK_OK;
}

static void
cd_fini(void *state)
{
    cd_state *st = state;
    if (st == NULL) {
        return;
    }
    free(st->hist);
    free(st->root);
    free(st->deepest_chain);
    free(st->threads);
    free(st);
}

static const ptk_plugin_desc cd_desc = {
    PTK_PLUGIN_HEADER,
    .name = "calldepth",
    .version = "1.0",
    .description = "histogram of Python calls by call depth",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN),
    .flags = PTK_FLAG_STACK,
    .options = cd_options,
    .init = cd_init,
    .on_event = cd_on_event,
    .report = cd_report,
    .fini = cd_fini,
};

PTK_PLUGIN_DEFINE(cd_desc)
