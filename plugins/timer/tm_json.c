/* timer reports: timer.json. */
#include "tm_report.h"

/* ---- timer.json ---------------------------------------------------------- */

/* Written as it goes, one function or edge a line, not built as Python
 * objects first: on a large program those took more memory than the
 * profile itself. */

/* Appends @p text at @p p; returns the end. */
static char *
tm_put(char *p, const char *text)
{
    size_t n = strlen(text);
    memcpy(p, text, n);
    return p + n;
}

/* Room for tm_put_acc: its text and four 20-digit numbers. */
#define TM_ACC_MAX 160

/* "calls":…,"primitive_calls":…,"own_ns":…,"inclusive_ns":… at @p p. */
static char *
tm_put_acc(char *p, const tm_acc *a)
{
    p = tm_put(p, "\"calls\":");
    p = ptk_put_u64(p, a->calls);
    p = tm_put(p, ",\"primitive_calls\":");
    p = ptk_put_u64(p, a->calls - a->reccalls);
    p = tm_put(p, ",\"own_ns\":");
    p = ptk_put_u64(p, a->it);
    p = tm_put(p, ",\"inclusive_ns\":");
    return ptk_put_u64(p, a->tt);
}

static int
tm_write_buf(FILE *f, const char *buf, const char *end)
{
    size_t n = (size_t)(end - buf);
    return fwrite(buf, 1, n, f) == n ? 0 : -1;
}

static int
tm_json_pystr(FILE *f, PyObject *s)
{
    PyObject *hold;
    const char *u = ptk_kit_name_bytes(s, NULL, &hold);
    if (u == NULL) {
        return -1;
    }
    int rc = ptk_kit_json_write(f, u);
    Py_XDECREF(hold);
    return rc;
}

/* "total_ns":…,"calls":…,"primitive_calls":…,"functions":[…],"edges":[…] */
static int
tm_json_figures(FILE *f, const tm_labels *L, const tm_view *v)
{
    if (fprintf(f, "\"total_ns\":%llu,\"calls\":%llu,\"primitive_calls\":%llu,"
                   "\n\"functions\":[",
                (unsigned long long)v->total_ns, (unsigned long long)v->calls,
                (unsigned long long)v->primitive) < 0) {
        return -1;
    }
    int first = 1;
    for (size_t i = 0; i < L->n; i++) {
        if (v->fn[i].calls == 0) {
            continue;
        }
        PyObject *key = PyList_GET_ITEM(L->keys, i);
        PyObject *hold;
        const char *file = ptk_kit_name_bytes(PyTuple_GET_ITEM(key, 0), NULL, &hold);
        long line = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        if (file == NULL || PyErr_Occurred()) {
            Py_XDECREF(hold);
            return -1;
        }
        int is_c = strcmp(file, "~") == 0 && line == 0;
        char buf[TM_ACC_MAX + 64], *p = buf;
        p = tm_put(p, first ? "\n{" : ",\n{");
        p = tm_put_acc(p, &v->fn[i]);
        p = tm_put(p, ",\"id\":");
        p = ptk_put_u64(p, i);
        p = tm_put(p, ",\"file\":");
        if (tm_write_buf(f, buf, p) < 0 || ptk_kit_json_write(f, file) < 0 ||
            fprintf(f, ",\"line\":%ld,\"name\":", line) < 0 ||
            tm_json_pystr(f, PyTuple_GET_ITEM(key, 2)) < 0 ||
            fputs(",\"display\":", f) == EOF ||
            tm_json_pystr(f, PyList_GET_ITEM(L->names, i)) < 0 ||
            fputs(",\"short\":", f) == EOF ||
            tm_json_pystr(f, PyList_GET_ITEM(L->shorts, i)) < 0 ||
            fprintf(f, ",\"kind\":\"%s\"}", is_c ? "c" : "python") < 0) {
            Py_XDECREF(hold);
            return -1;
        }
        Py_XDECREF(hold);
        first = 0;
    }
    if (fputs("],\n\"edges\":[", f) == EOF) {
        return -1;
    }
    for (size_t i = 0; i < v->nedges; i++) {
        const tm_vedge *e = &v->edges[i];
        char buf[TM_ACC_MAX + 64], *p = buf;
        p = tm_put(p, i ? ",\n{" : "\n{");
        p = tm_put_acc(p, &e->acc);
        p = tm_put(p, ",\"caller\":");
        p = ptk_put_u64(p, e->caller);
        p = tm_put(p, ",\"callee\":");
        p = ptk_put_u64(p, e->callee);
        p = tm_put(p, "}");
        if (tm_write_buf(f, buf, p) < 0) {
            return -1;
        }
    }
    return fputs("]", f) == EOF ? -1 : 0;
}

/* The calls merged by edge (contexts off, or past max_contexts). */
void
tm__merged_counts(const tm_state *st, uint64_t *edges, uint64_t *ns)
{
    *edges = *ns = 0;
    for (size_t t = 0; t <= st->nthreads; t++) {
        const tm_thread *th = t < st->nthreads ? st->threads[t] : &st->gone;
        for (size_t i = 0; th && th->nodes.slots && i <= th->nodes.mask; i++) {
            const tm_node *n = th->nodes.slots[i].value;
            if (n != NULL && n->merged) {
                (*edges)++;
                *ns += n->self_ns;
            }
        }
    }
}

static uint64_t
tm_thread_own(const tm_thread *th)
{
    uint64_t own = 0;
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        own += s != NULL ? s->fig.it : 0;
    }
    return own;
}

/* One thread's record of timer.json: its identity and counts, then its
 * figures (per_thread=true) or its own time; 1, or 0 when a write failed. */
static int
tm_json_thread(FILE *f, tm_state *st, const tm_labels *L, size_t i, int first)
{
    const tm_thread *th = st->threads[i];
    const tm_done *dn = &st->done[i];
    /* A record whose thread state ended and came back (a C thread's next
     * PyGILState_Ensure) has both: its figures so far are merged. */
    const char *name = th != NULL ? th->name : dn->name;
    size_t depth = th != NULL && th->max_depth > dn->max_depth ? th->max_depth : dn->max_depth;
    int ok = fprintf(f, "%s\n{\"index\":%zu,\"ident\":%llu,\"name\":",
                     first ? "" : ",", i,
                     (unsigned long long)(th != NULL ? th->ident : dn->ident)) >= 0 &&
             (name != NULL ? ptk_kit_json_write(f, name) == 0 : fputs("null", f) != EOF) &&
             fprintf(f, ",\"max_depth\":%zu,\"unmatched_returns\":%llu,"
                        "\"resynced_frames\":%llu,\"ended\":%s,",
                     depth,
                     (unsigned long long)((th != NULL ? th->unmatched : 0) + dn->unmatched),
                     (unsigned long long)((th != NULL ? th->resynced : 0) + dn->resynced),
                     th != NULL ? "false" : "true") >= 0;
    if (ok && th != NULL && st->per_thread) {
        tm_view v;
        if (tm__view_build(st, L, (long)i, &v) != 0) {
            return 0;
        }
        ok = tm_json_figures(f, L, &v) == 0;
        tm__view_clear(&v);
    }
    else if (ok) {
        ok = fprintf(f, "\"total_ns\":%llu",
                     (unsigned long long)((th != NULL ? tm_thread_own(th) : 0) +
                                          dn->own_ns)) >= 0;
    }
    return ok && fputc('}', f) != EOF;
}

/* per_context: ,"contexts":[{name, pstats, total_ns, calls,
 * primitive_calls, top: [{display, calls, primitive_calls, own_ns,
 * inclusive_ns}]}], in the order first seen. */
static int
tm_json_contexts(FILE *f, const tm_labels *L, const tm_cinfo *cinfo, size_t n)
{
    if (fputs(",\n\"contexts\":[", f) == EOF) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const tm_cinfo *c = &cinfo[i];
        if (fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f) == EOF ||
            tm_json_pystr(f, c->name) < 0 ||
            fprintf(f, ",\"pstats\":\"%s\",\"total_ns\":%llu,\"calls\":%llu,"
                       "\"primitive_calls\":%llu,\"top\":[",
                    c->file, (unsigned long long)c->total_ns, (unsigned long long)c->calls,
                    (unsigned long long)c->primitive) < 0) {
            return -1;
        }
        for (size_t j = 0; j < c->ntop; j++) {
            char buf[TM_ACC_MAX + 8], *p = buf;
            p = tm_put(p, j ? ",{" : "{");
            p = tm_put_acc(p, &c->top_acc[j]);
            p = tm_put(p, ",\"display\":");
            if (tm_write_buf(f, buf, p) < 0 ||
                tm_json_pystr(f, PyList_GET_ITEM(L->names, c->top[j])) < 0 ||
                fputc('}', f) == EOF) {
                return -1;
            }
        }
        if (fputs("]}", f) == EOF) {
            return -1;
        }
    }
    return fputs("]", f) == EOF ? -1 : 0;
}

int
tm__write_json(tm_state *st, const tm_labels *L, const tm_view *all,
              const ptk_report_args *args, uint64_t max_depth,
              uint64_t unmatched, uint64_t resynced, size_t written,
               const tm_cinfo *cinfo, size_t ncinfo)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, "timer.json", &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    uint64_t medges, mns;
    tm__merged_counts(st, &medges, &mns);
    /* the run's identity, as report_write_object adds it (ABI 1.2) */
    const char *run = st->host->struct_size > offsetof(ptk_host, run_identity)
                          ? st->host->run_identity(st->ctx)
                          : NULL;
    if (run != NULL && fprintf(f, "{\"run\":%s,", run) < 0) {
        st->host->report_commit(token, 0);
        return PTK_EIO;
    }
    int ok = fprintf(f, "%s\"plugin\":\"timer\",\"clock\":\"%s\",\"unit\":\"ns\","
                        "\"builtins\":%s,\"per_thread\":%s,\"elapsed_s\":%.9f,"
                        "\"max_depth\":%llu,\"unmatched_returns\":%llu,"
                        "\"resynced_frames\":%llu,\n\"calling_contexts\":{"
                        "\"kept\":%s,\"max_contexts\":%lld,\"contexts\":%zu,"
                        "\"written\":%zu,\"merged_edges\":%llu,\"merged_ns\":%llu,"
                        "\"kept_contexts\":%zu,\"merged_contexts\":%zu,"
                        "\"merged_contexts_ns\":%llu},\n",
                     run != NULL ? "" : "{",
                     st->cpu_clock ? "cpu" : "wall", st->builtins ? "true" : "false",
                     st->per_thread ? "true" : "false", args->elapsed_s,
                     (unsigned long long)max_depth, (unsigned long long)unmatched,
                     (unsigned long long)resynced, st->contexts ? "true" : "false",
                     (long long)st->max_contexts, st->ncontexts, written,
                     (unsigned long long)medges, (unsigned long long)mns,
                     st->flame_kept, st->flame_merged,
                     (unsigned long long)st->flame_merged_ns) >= 0 &&
             tm_json_figures(f, L, all) == 0 && fputs(",\n\"threads\":[", f) != EOF;
    int first = 1;
    for (size_t i = 0; ok && i < st->nthreads; i++) {
        if (st->threads[i] == NULL && !st->done[i].ended) {
            continue;
        }
        ok = tm_json_thread(f, st, L, i, first);
        first = 0;
    }
    ok = ok && fputs("]", f) != EOF;
    if (ok && st->await_mode) {
        /* per asyncio Task: its steps, from the start of its first to the
         * end of its last (wall), and the time they ran (running) */
        ok = fputs(",\n\"await\":true,\"tasks\":[", f) != EOF;
        for (size_t i = 0; ok && i < st->ntasks; i++) {
            const tm_task *tk = st->task_list[i];
            PyObject *name = PyUnicode_DecodeUTF8(tk->name, (Py_ssize_t)strlen(tk->name),
                                                  "replace");
            ok = name != NULL && fprintf(f, "%s\n{\"name\":", i ? "," : "") >= 0 &&
                 tm_json_pystr(f, name) == 0 && fputs(",\"coroutine\":", f) != EOF &&
                 (tk->coro != NULL ? tm_json_pystr(f, tk->coro->qualname) == 0
                                   : fputs("null", f) != EOF) &&
                 fprintf(f, ",\"steps\":%llu,\"wall_ns\":%llu,\"running_ns\":%llu}",
                         (unsigned long long)tk->steps,
                         (unsigned long long)(tk->last_ns > tk->first_ns
                                                  ? tk->last_ns - tk->first_ns : 0),
                         (unsigned long long)tk->running_ns) >= 0;
            Py_XDECREF(name);
        }
        ok = ok && fputs("]", f) != EOF;
    }
    if (ok && st->per_context) {
        ok = tm_json_contexts(f, L, cinfo, ncinfo) == 0;
    }
    ok = ok && fputs("}\n", f) != EOF;
    if (!ok && PyErr_Occurred()) {
        PyErr_Clear();
    }
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write timer.json");
    }
    return PTK_OK;
}
